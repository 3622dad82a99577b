package metricsapi

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

func u64(v uint64) *uint64 { return &v }

// nodeAPI serves a summary as minilet's node API does and counts the requests.
func nodeAPI(t *testing.T, s statsapi.Summary, hits *atomic.Int32) (*httptest.Server, int32) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stats/summary" || r.URL.Query().Get("only_cpu_and_memory") != "true" {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		_ = json.NewEncoder(w).Encode(s)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return srv, int32(p)
}

func TestMetricsAPI(t *testing.T) {
	now := metav1.NewTime(time.Now())
	cpu := func(n uint64) *statsapi.CPUStats { return &statsapi.CPUStats{Time: now, UsageNanoCores: u64(n)} }
	mem := func(b uint64) *statsapi.MemoryStats { return &statsapi.MemoryStats{Time: now, WorkingSetBytes: u64(b)} }
	summary := statsapi.Summary{
		Node: statsapi.NodeStats{NodeName: "n1", CPU: cpu(1_500_000_000), Memory: mem(2 << 30)},
		Pods: []statsapi.PodStats{
			{PodRef: statsapi.PodReference{Name: "web", Namespace: "default", UID: "u1"},
				Containers: []statsapi.ContainerStats{{Name: "app", CPU: cpu(250_000_000), Memory: mem(64 << 20)}}},
			{PodRef: statsapi.PodReference{Name: "db", Namespace: "data", UID: "u2"},
				Containers: []statsapi.ContainerStats{{Name: "pg", CPU: cpu(10_000_000), Memory: mem(128 << 20)}}},
			{PodRef: statsapi.PodReference{Name: "new", Namespace: "default", UID: "u3"}, // not measured yet
				Containers: []statsapi.ContainerStats{{Name: "c", CPU: &statsapi.CPUStats{Time: now}, Memory: mem(1)}}},
		},
	}
	var hits atomic.Int32
	srv, port := nodeAPI(t, summary, &hits)
	// No InternalIP: the node is reached, as by the node proxy, at its first address of the
	// preferred types (the default's ExternalIP before Hostname).
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1.invalid"}, {Type: corev1.NodeExternalIP, Address: "127.0.0.1"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: port}}}}
	pod := func(ns, name, uid string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Labels: labels},
			Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	client := fake.NewClientset(node,
		pod("default", "web", "u1", map[string]string{"app": "web"}),
		pod("data", "db", "u2", map[string]string{"app": "db"}),
		pod("default", "new", "u3", nil))
	api := New(client, srv.Client().Transport, nil, slog.Default())

	get := func(path string, into any) int {
		t.Helper()
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/"+path, nil))
		if into != nil && rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
				t.Fatal(err)
			}
		}
		return rec.Code
	}
	var nodes metricsv1beta1.NodeMetricsList
	if code := get("nodes", &nodes); code != 200 || len(nodes.Items) != 1 || nodes.Items[0].Usage.Cpu().MilliValue() != 1500 ||
		nodes.Items[0].Usage.Memory().Value() != 2<<30 || nodes.Kind != "NodeMetricsList" {
		t.Fatalf("nodes: %d %+v", code, nodes)
	}
	if code := get("nodes?labelSelector=zone%3Db", &nodes); code != 200 || len(nodes.Items) != 0 {
		t.Errorf("nodes in zone b: %d %+v", code, nodes)
	}
	var nm metricsv1beta1.NodeMetrics
	if code := get("nodes/n1", &nm); code != 200 || nm.Name != "n1" || nm.Kind != "NodeMetrics" {
		t.Errorf("node n1: %d %+v", code, nm)
	}
	var pods metricsv1beta1.PodMetricsList
	if code := get("pods", &pods); code != 200 || len(pods.Items) != 2 {
		t.Errorf("all pods (the unmeasured one left out): %d %+v", code, pods)
	}
	if code := get("namespaces/default/pods", &pods); code != 200 || len(pods.Items) != 1 || pods.Items[0].Name != "web" ||
		pods.Items[0].Containers[0].Usage.Cpu().MilliValue() != 250 {
		t.Errorf("default pods: %d %+v", code, pods)
	}
	if code := get("pods?labelSelector=app%3Ddb", &pods); code != 200 || len(pods.Items) != 1 || pods.Items[0].Namespace != "data" {
		t.Errorf("pods app=db: %d %+v", code, pods)
	}
	if code := get("namespaces/default/pods/nope", nil); code != http.StatusNotFound {
		t.Errorf("missing pod: %d", code)
	}
	if code := get("namespaces/default/pods/new", nil); code != http.StatusNotFound {
		t.Errorf("unmeasured pod: %d, want 404 as metrics-server", code)
	}
	// In metrics-server's words: kubectl top pod new says
	// Error from server (NotFound): podmetrics.metrics.k8s.io "default/new" not found
	var status metav1.Status
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/new", nil))
	if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil || status.Message != `podmetrics.metrics.k8s.io "default/new" not found` {
		t.Errorf("unmeasured pod: %v %q, want metrics-server's message", err, status.Message)
	}
	// All of that within the cache's life took one question to the node.
	if n := hits.Load(); n != 1 {
		t.Errorf("the node was asked %d times, want 1 (cached %s)", n, cacheTTL)
	}
}
