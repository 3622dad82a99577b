package generic

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// A deletion whose preconditions fail is a 409 in kube-apiserver v1.36.3's words (its
// answers to the same DELETEs): rest.BeforeDelete's, naming the kind, for a pod (deleted or
// evicted) or a ConfigMap; the namespace storage's own for a namespace.
func TestDeletePreconditionWords(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	ctx := t.Context()
	pods, cms, nss := s.resource(t, "pods"), s.resource(t, "configmaps"), s.resource(t, "namespaces")
	created, err := s.Create(ctx, pods, pod("a"), CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := s.Create(ctx, cms, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := s.Create(ctx, nss, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wrongUID := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("nope"))}}
	oldVersion := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("1")}}
	check := func(what string, err error, want string) {
		t.Helper()
		if !apierrors.IsConflict(err) || err.Error() != want {
			t.Errorf("%s: %v, want 409 %q", what, err, want)
		}
	}
	_, _, err = s.Delete(ctx, pods, "default", "a", wrongUID)
	check("pod", err, `Operation cannot be fulfilled on Pod "a": the UID in the precondition (nope) does not match the UID in record (`+string(MustMeta(created).GetUID())+`). The object might have been deleted and then recreated`)
	err = s.Evict(ctx, pods, "default", "a", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "a"}, DeleteOptions: &oldVersion}, false)
	check("eviction", err, `Operation cannot be fulfilled on Pod "a": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (`+MustMeta(created).GetResourceVersion()+`). The object might have been modified`)
	_, _, err = s.Delete(ctx, cms, "default", "cfg", oldVersion)
	check("configmap", err, `Operation cannot be fulfilled on ConfigMap "cfg": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (`+MustMeta(cm).GetResourceVersion()+`). The object might have been modified`)
	_, _, err = s.Delete(ctx, nss, "", "team", wrongUID)
	check("namespace", err, `Operation cannot be fulfilled on namespaces "team": Precondition failed: UID in precondition: nope, UID in object meta: `+string(MustMeta(ns).GetUID()))
}
