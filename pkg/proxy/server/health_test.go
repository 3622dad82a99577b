package server

import (
	"encoding/json"
	"maps"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// /healthz answers kube-proxy's ProxyHealth: lastUpdated, currentTime, nodeEligible,
// healthy and the per-family status, 503 before the first sync and when a change waited
// two sync periods.
func TestHealthzAnswersKubeProxysFields(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	h := &health{period: time.Second, node: func() *corev1.Node { return node }, metrics: newMetrics()}
	get := func(path string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		h.handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v: %s", path, err, rec.Body)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: headers %v: want kube-proxy's", path, rec.Header())
		}
		return rec.Code, body
	}
	if code, body := get("/healthz"); code != 503 || body["healthy"] != false {
		t.Errorf("before the first sync: %d %v", code, body)
	}
	h.synced(time.Now())
	code, body := get("/healthz")
	status, _ := body["status"].(map[string]any)
	v4, _ := status["IPv4"].(map[string]any)
	if code != 200 || body["healthy"] != true || body["nodeEligible"] != true || body["lastUpdated"] == nil || body["currentTime"] == nil ||
		v4["healthy"] != true || v4["lastUpdated"] == nil || body["lastUpdated"] != body["currentTime"] {
		t.Errorf("after a sync: %d %v", code, body)
	}
	// kube-proxy marshals its ProxyHealth struct: its fields in order, no newline after.
	rec := httptest.NewRecorder()
	h.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if order := regexp.MustCompile(`^\{"lastUpdated":"[^"]+","currentTime":"[^"]+","nodeEligible":true,"healthy":true,"status":\{"IPv4":\{"lastUpdated":"[^"]+","healthy":true\}\}\}$`); !order.Match(rec.Body.Bytes()) {
		t.Errorf("body %q: want kube-proxy's field order and no trailing newline", rec.Body)
	}
	h.queued(time.Now().Add(-3 * time.Second))
	if code, body := get("/healthz"); code != 503 || body["healthy"] != false || h.healthy(time.Now()) {
		t.Errorf("with a change waiting 3 sync periods: %d %v", code, body)
	}
	if code, body := get("/livez"); code != 503 || body["healthy"] != false {
		t.Errorf("/livez with a change waiting 3 sync periods: %d %v", code, body)
	}
}

// A node being deleted, tainted for deletion by the cluster autoscaler, or gone is not
// eligible: /healthz answers 503 with nodeEligible false (load balancers drain it), while
// /livez, the proxy's own liveness, answers 200 without nodeEligible, as kube-proxy's.
func TestNodeEligibility(t *testing.T) {
	deleting := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", DeletionTimestamp: &metav1.Time{Time: time.Now()}}}
	tainted := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "ToBeDeletedByClusterAutoscaler", Effect: corev1.TaintEffectNoSchedule}}}}
	for name, node := range map[string]*corev1.Node{"deleting": deleting, "tainted": tainted, "gone": nil} {
		h := &health{period: time.Second, node: func() *corev1.Node { return node }, metrics: newMetrics()}
		h.synced(time.Now())
		for path, want := range map[string]int{"/healthz": 503, "/livez": 200} {
			rec := httptest.NewRecorder()
			h.handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			var body map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &body)
			eligible, has := body["nodeEligible"]
			if rec.Code != want || body["healthy"] != true || (path == "/healthz" && eligible != false) || (path == "/livez" && has) {
				t.Errorf("%s node, %s: %d %s; want %d, healthy, nodeEligible false on /healthz only", name, path, rec.Code, rec.Body, want)
			}
		}
	}
}

// TestHealthAnswersCounted: each /healthz and /livez answer counts in kube-proxy's
// kubeproxy_proxy_healthz_total and kubeproxy_proxy_livez_total by its HTTP code.
func TestHealthAnswersCounted(t *testing.T) {
	tainted := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "ToBeDeletedByClusterAutoscaler", Effect: corev1.TaintEffectNoSchedule}}}}
	m := newMetrics()
	h := &health{period: time.Second, node: func() *corev1.Node { return tainted }, metrics: m}
	get := func(path string) {
		h.handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	get("/healthz") // not synced: 503
	get("/livez")   // 503
	h.synced(time.Now())
	get("/healthz") // tainted: 503
	get("/livez")   // 200
	get("/livez")
	counts := map[string]float64{}
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "code" {
					counts[f.GetName()+"{code="+l.GetValue()+"}"] = s.GetCounter().GetValue()
				}
			}
		}
	}
	want := map[string]float64{"kubeproxy_proxy_healthz_total{code=503}": 2, "kubeproxy_proxy_livez_total{code=503}": 1, "kubeproxy_proxy_livez_total{code=200}": 2}
	if !maps.Equal(counts, want) {
		t.Errorf("counts %v, want %v", counts, want)
	}
}
