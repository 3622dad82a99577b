package apiserver

import (
	"net/http"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestObjectCountMetrics: /metrics counts the stored objects of each resource as
// kube-apiserver's apiserver_resource_objects and apiserver_storage_objects do, once per
// resource whatever its versions (HorizontalPodAutoscalers are served as v1 and v2).
func TestObjectCountMetrics(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	for _, name := range []string{"a", "b", "c"} {
		if w := do(t, h, "POST", "/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}); w.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", w.Code, w.Body)
		}
	}
	w := do(t, h, "GET", "/metrics", nil)
	for _, want := range []string{
		`apiserver_resource_objects{group="",resource="configmaps"} 3`,
		`apiserver_storage_objects{resource="configmaps"} 3`,
		`apiserver_resource_objects{group="apps",resource="deployments"} 0`,
		`apiserver_storage_objects{resource="deployments.apps"} 0`,
	} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).MatchString(w.Body.String()) {
			t.Errorf("no %s in /metrics", want)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^apiserver_storage_objects\{resource="horizontalpodautoscalers.autoscaling"\}`).FindAllString(w.Body.String(), -1)); n != 1 {
		t.Errorf("horizontalpodautoscalers counted %d times", n)
	}
}
