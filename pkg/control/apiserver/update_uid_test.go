package apiserver

import (
	"encoding/json"
	"net/http"
	"testing"

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
	status := func(w interface{ Bytes() []byte }) metav1.Status {
		var st metav1.Status
		_ = json.Unmarshal(w.Bytes(), &st)
		return st
	}
	stored := cm.UID
	cm.UID, cm.ResourceVersion = "other", "1" // a stale resourceVersion too: the uid is checked first
	w = do(t, h, "PUT", cfg, &cm)
	want := `Operation cannot be fulfilled on configmaps "cfg": StorageError: invalid object, Code: 4, Key: /registry/core/configmaps/default/cfg, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: other, UID in object meta: ` + string(stored)
	if st := status(w.Body); w.Code != http.StatusConflict || st.Reason != metav1.StatusReasonConflict || st.Message != want {
		t.Errorf("PUT of another uid: %d %s\nwant 409 %q", w.Code, w.Body, want)
	}
	w = patchAs(h, "application/merge-patch+json", cfg, `{"metadata":{"uid":"other"}}`)
	want = `ConfigMap "cfg" is invalid: metadata.uid: Invalid value: "other": field is immutable`
	if st := status(w.Body); w.Code != http.StatusUnprocessableEntity || st.Message != want {
		t.Errorf("PATCH of another uid: %d %s\nwant 422 %q", w.Code, w.Body, want)
	}
	w = patchAs(h, "application/merge-patch+json", cfg, `{"metadata":{"uid":"`+string(stored)+`"},"data":{"x":"1"}}`)
	if w.Code != http.StatusOK {
		t.Errorf("PATCH with the stored uid: %d %s", w.Code, w.Body)
	}
}
