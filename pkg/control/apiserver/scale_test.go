package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestScaleSubresource(t *testing.T) {
	s := newTestServer(t, storetest.Bolt(t), "10.96.0.0/12", "", 6443)
	if err := s.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, _ := s.reg.Lookup(appsv1.SchemeGroupVersion.WithResource("deployments"))
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.25"}}}},
	}}
	if _, err := s.objects.Create(context.Background(), res, d, generic.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const path = "/apis/apps/v1/namespaces/default/deployments/web/scale"
	call := func(method, contentType, body string, accept ...string) (int, []byte) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		for _, a := range accept {
			req.Header.Set("Accept", a)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes()
	}
	decode := func(body []byte) autoscalingv1.Scale {
		t.Helper()
		var scale autoscalingv1.Scale
		if err := json.Unmarshal(body, &scale); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return scale
	}

	code, body := call(http.MethodGet, "", "")
	scale := decode(body)
	if code != http.StatusOK || scale.Kind != "Scale" || scale.APIVersion != "autoscaling/v1" || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" {
		t.Fatalf("GET scale: %d %s", code, body)
	}
	stale := scale.ResourceVersion

	scale.Spec.Replicas = 3
	put, _ := json.Marshal(scale)
	if code, body = call(http.MethodPut, "application/json", string(put)); code != http.StatusOK || decode(body).Spec.Replicas != 3 {
		t.Fatalf("PUT scale: %d %s", code, body)
	}
	got := read[*appsv1.Deployment](t, s, appsv1.SchemeGroupVersion.WithResource("deployments"), "default", "web")
	if *got.Spec.Replicas != 3 || got.Generation != 2 {
		t.Errorf("deployment after scaling: replicas %d generation %d", *got.Spec.Replicas, got.Generation)
	}
	if code, body = call(http.MethodPut, "application/json", string(put)); code != http.StatusConflict {
		t.Errorf("PUT with the stale resourceVersion %s: %d %s, want 409", stale, code, body)
	}
	if code, body = call(http.MethodPatch, "application/merge-patch+json", `{"spec":{"replicas":5}}`); code != http.StatusOK || decode(body).Spec.Replicas != 5 {
		t.Errorf("merge PATCH scale: %d %s", code, body)
	}
	if code, body = call(http.MethodPatch, "application/merge-patch+json", `{"spec":{"replicas":-1}}`); code != http.StatusUnprocessableEntity ||
		!strings.Contains(string(body), "spec.replicas") || !strings.Contains(string(body), `"kind":"Scale"`) {
		t.Errorf("negative replicas: %d %s, want 422 naming spec.replicas of the Scale", code, body)
	}
	code, body = call(http.MethodGet, "", "", "application/json;as=Table;v=v1;g=meta.k8s.io")
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil || code != http.StatusOK || len(table.Rows) != 1 || table.Rows[0].Cells[1] != float64(5) {
		t.Errorf("scale as a table: %d %s", code, body)
	}
}
