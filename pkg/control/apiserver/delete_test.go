package apiserver

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A DELETE answers as kube-apiserver's delete handler and generic store do: an object
// removed at once is answered by a Status naming it (details.kind is the resource), but for
// the kinds whose storage returns the deleted object (pods, services, namespaces...); an
// object still held (finalizers, a grace period) is answered by the object itself, with 202
// when the request asked to cascade by orphanDependents false.
func TestDeleteResponses(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	create := func(path string, obj any) {
		t.Helper()
		if w := do(t, h, "POST", path, obj); w.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", path, w.Code, w.Body)
		}
	}
	labels := map[string]string{"app": "web"}
	create("/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}})
	create("/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}})
	create("/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held-too", Finalizers: []string{"example.com/hold"}}})
	create("/apis/apps/v1/namespaces/default/deployments", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}})
	create("/api/v1/namespaces/default/services", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}})

	for _, tc := range []struct {
		path       string
		body       any
		code       int
		kind, name string
		details    *metav1.StatusDetails // of a Status, but for its uid
	}{
		{"/api/v1/namespaces/default/configmaps/plain?dryRun=All", nil, http.StatusOK, "Status", "", &metav1.StatusDetails{Name: "plain", Kind: "configmaps"}},
		{"/api/v1/namespaces/default/configmaps/plain", nil, http.StatusOK, "Status", "", &metav1.StatusDetails{Name: "plain", Kind: "configmaps"}},
		{"/apis/apps/v1/namespaces/default/deployments/web", nil, http.StatusOK, "Status", "", &metav1.StatusDetails{Name: "web", Group: "apps", Kind: "deployments"}},
		{"/api/v1/namespaces/default/services/svc", nil, http.StatusOK, "Service", "svc", nil},
		{"/api/v1/namespaces/default/configmaps/held", nil, http.StatusOK, "ConfigMap", "held", nil},
		{"/api/v1/namespaces/default/configmaps/held-too", &metav1.DeleteOptions{OrphanDependents: new(bool)}, http.StatusAccepted, "ConfigMap", "held-too", nil},
	} {
		w := do(t, h, "DELETE", tc.path, tc.body)
		var got struct {
			Kind     string
			Metadata metav1.ObjectMeta
			Status   any
			Details  *metav1.StatusDetails
		}
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatalf("DELETE %s: %v: %s", tc.path, err, w.Body)
		}
		if got.Details != nil {
			if got.Details.UID == "" {
				t.Errorf("DELETE %s: Status without the object's uid: %s", tc.path, w.Body)
			}
			got.Details.UID = ""
		}
		if w.Code != tc.code || got.Kind != tc.kind || got.Metadata.Name != tc.name || (got.Details == nil) != (tc.details == nil) ||
			got.Details != nil && !reflect.DeepEqual(got.Details, tc.details) || tc.kind == "Status" && got.Status != metav1.StatusSuccess {
			t.Errorf("DELETE %s: %d %s\nwant %d, kind %s, name %q, details %+v", tc.path, w.Code, w.Body, tc.code, tc.kind, tc.name, tc.details)
		}
	}
}

// A deletecollection answers the list of what it deleted; as in kube-apiserver, the items of
// a typed list name no kind or apiVersion.
func TestDeleteCollectionItemsWithoutKind(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	for _, name := range []string{"a", "b"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"dc": "yes"}}}
		if w := do(t, h, "POST", "/api/v1/namespaces/default/configmaps", cm); w.Code != http.StatusCreated {
			t.Fatalf("POST: %d %s", w.Code, w.Body)
		}
	}
	w := do(t, h, "DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=dc%3Dyes", nil)
	var got struct {
		Kind, APIVersion string
		Items            []map[string]any
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusOK {
		t.Fatalf("deletecollection: %d %v: %s", w.Code, err, w.Body)
	}
	if got.Kind != "ConfigMapList" || got.APIVersion != "v1" || len(got.Items) != 2 {
		t.Fatalf("answer %s", w.Body)
	}
	for _, item := range got.Items {
		if item["kind"] != nil || item["apiVersion"] != nil {
			t.Errorf("item names kind %v, apiVersion %v", item["kind"], item["apiVersion"])
		}
	}
}
