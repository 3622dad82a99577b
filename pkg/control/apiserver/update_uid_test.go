package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A uid in the body of an update is a precondition, checked before anything else against
// the stored object (apiserver's rest.defaultUpdatedObjectInfo.Preconditions, checked by
// the etcd3 store and worded by storage/errors InterpretUpdateError); a patch that changes
// the uid is an update of an immutable field (rest.BeforeUpdate, ValidateObjectMetaUpdate).
func TestUpdateOfAnotherUID(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	const cfg = "/api/v1/namespaces/default/configmaps/cfg"
	w := do(t, h, "POST", "/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}})
	var cm corev1.ConfigMap
	if err := json.Unmarshal(w.Body.Bytes(), &cm); w.Code != http.StatusCreated || err != nil {
		t.Fatalf("creating cfg: %d %s", w.Code, w.Body)
	}
	stored := cm.UID
	cm.UID, cm.ResourceVersion = "other", "1" // a stale resourceVersion too: the uid is checked first
	w = do(t, h, "PUT", cfg, &cm)
	want := `Operation cannot be fulfilled on configmaps "cfg": StorageError: invalid object, Code: 4, Key: /registry/core/configmaps/default/cfg, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: other, UID in object meta: ` + string(stored)
	if st := apitest.ResponseStatus(t, w.Body.Bytes()); w.Code != http.StatusConflict || st.Reason != metav1.StatusReasonConflict || st.Message != want {
		t.Errorf("PUT of another uid: %d %s\nwant 409 %q", w.Code, w.Body, want)
	}
	w = patchAs(h, "application/merge-patch+json", cfg, `{"metadata":{"uid":"other"}}`)
	want = `ConfigMap "cfg" is invalid: metadata.uid: Invalid value: "other": field is immutable`
	if st := apitest.ResponseStatus(t, w.Body.Bytes()); w.Code != http.StatusUnprocessableEntity || st.Message != want {
		t.Errorf("PATCH of another uid: %d %s\nwant 422 %q", w.Code, w.Body, want)
	}
	w = patchAs(h, "application/merge-patch+json", cfg, `{"metadata":{"uid":"`+string(stored)+`"},"data":{"x":"1"}}`)
	if w.Code != http.StatusOK {
		t.Errorf("PATCH with the stored uid: %d %s", w.Code, w.Body)
	}
}

// A uid in a Scale is a precondition on the scaled object: a PUT's is checked by the store
// first, as any update's (TestUpdateOfAnotherUID); a patch that changes it is refused by
// the scale update itself, after the Scale's validation, as kube's scaleUpdatedObjectInfo
// (pkg/registry/apps/deployment/storage, core/replicationcontroller/storage) words it.
func TestScaleOfAnotherUID(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.25"}}}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ReplicationControllerSpec{Selector: labels, Template: &template}}
	for _, tc := range []struct {
		collection, key, resource, scaleResource string
		obj                                      any
	}{
		{"/apis/apps/v1/namespaces/default/deployments", "/registry/apps/deployments/default/web", "deployments.apps", "deployments/scale.apps", d},
		{"/api/v1/namespaces/default/replicationcontrollers", "/registry/core/replicationcontrollers/default/web", "replicationcontrollers", "replicationcontrollers/scale", rc},
	} {
		w := do(t, h, "POST", tc.collection, tc.obj)
		var created metav1.PartialObjectMetadata
		if err := json.Unmarshal(w.Body.Bytes(), &created); w.Code != http.StatusCreated || err != nil {
			t.Fatalf("creating %s: %d %s", tc.collection, w.Code, w.Body)
		}
		path := tc.collection + "/web/scale"
		var scale autoscalingv1.Scale
		apitest.DecodeStrict(t, do(t, h, "GET", path, nil).Body.Bytes(), &scale)
		scale.UID, scale.ResourceVersion, scale.Spec.Replicas = "other", "1", 2 // a stale resourceVersion too: the uid is checked first
		w = do(t, h, "PUT", path, &scale)
		want := fmt.Sprintf(`Operation cannot be fulfilled on %s "web": StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: other, UID in object meta: %s`, tc.resource, tc.key, created.UID)
		if st := apitest.ResponseStatus(t, w.Body.Bytes()); w.Code != http.StatusConflict || st.Reason != metav1.StatusReasonConflict || st.Message != want {
			t.Errorf("PUT %s of another uid: %d %s\nwant 409 %q", path, w.Code, w.Body, want)
		}
		w = patchAs(h, "application/merge-patch+json", path, `{"metadata":{"uid":"other"},"spec":{"replicas":2}}`)
		want = fmt.Sprintf(`Operation cannot be fulfilled on %s "web": Precondition failed: UID in precondition: other, UID in object meta: %s`, tc.scaleResource, created.UID)
		if st := apitest.ResponseStatus(t, w.Body.Bytes()); w.Code != http.StatusConflict || st.Reason != metav1.StatusReasonConflict || st.Message != want {
			t.Errorf("PATCH %s of another uid: %d %s\nwant 409 %q", path, w.Code, w.Body, want)
		}
		w = patchAs(h, "application/merge-patch+json", path, `{"metadata":{"uid":"other"},"spec":{"replicas":-1}}`)
		if w.Code != http.StatusUnprocessableEntity {
			t.Errorf("PATCH %s of another uid and negative replicas: %d %s; want 422 (the Scale is validated first)", path, w.Code, w.Body)
		}
		w = patchAs(h, "application/merge-patch+json", path, `{"metadata":{"uid":"`+string(created.UID)+`"},"spec":{"replicas":3}}`)
		if w.Code != http.StatusOK {
			t.Errorf("PATCH %s with the stored uid: %d %s", path, w.Code, w.Body)
		}
	}
}
