package generic

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A create in a terminating namespace is refused as kube-apiserver's NamespaceLifecycle
// refuses it: forbidden on the object being created, with the NamespaceTerminating cause
// (kubectl drain looks for it), and a pod's binding is refused the same way.
func TestCreateInTerminatingNamespace(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	ctx := t.Context()
	pods, nss := s.resource(t, "pods"), s.resource(t, "namespaces")
	if _, err := s.Create(ctx, nss, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going"}}, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := pod("a")
	p.Namespace = "going"
	if _, err := s.Create(ctx, pods, p, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, nss, "", "going", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cause := metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Message: "namespace going is being terminated", Field: "metadata.namespace"}
	check := func(what string, err error, want string) {
		t.Helper()
		status, ok := err.(apierrors.APIStatus)
		if !ok || !apierrors.IsForbidden(err) {
			t.Fatalf("%s: %v, want forbidden", what, err)
		}
		if err.Error() != want {
			t.Errorf("%s: %q, want %q", what, err.Error(), want)
		}
		if d := status.Status().Details; d == nil || len(d.Causes) != 1 || d.Causes[0] != cause {
			t.Errorf("%s: details %+v, want the cause %+v", what, d, cause)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "going"}}
	_, err := s.Create(ctx, s.resource(t, "configmaps"), cm, CreateOptions{})
	check("create", err, `configmaps "late" is forbidden: unable to create new content in namespace going because it is being terminated`)
	err = s.Bind(ctx, pods, "going", "a", &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "going"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n"}}, false)
	check("binding", err, `pods "a" is forbidden: unable to create new content in namespace going because it is being terminated`)
}

// default, kube-system and kube-public may not be deleted, as kube-apiserver's
// NamespaceLifecycle refuses (its immortal namespaces); others may.
func TestImmortalNamespaces(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	ctx := t.Context()
	nss := s.resource(t, "namespaces")
	for _, name := range []string{"kube-system", "kube-public", "other"} {
		if _, err := s.Create(ctx, nss, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		_, _, err := s.Delete(ctx, nss, "", name, metav1.DeleteOptions{})
		if want := `namespaces "` + name + `" is forbidden: this namespace may not be deleted`; !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("delete %s: %v, want %q", name, err, want)
		}
		if ns, err := s.Get(ctx, nss, "", name); err != nil || ns.(*corev1.Namespace).DeletionTimestamp != nil {
			t.Errorf("%s after the refused delete: %v", name, err)
		}
	}
	if _, _, err := s.Delete(ctx, nss, "", "other", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete other: %v", err)
	}
}

// A namespace's deletion makes it Terminating, as kube's namespace Delete does, and a
// status write may not set it back to Active: 422 in kube-apiserver v1.36.3's words. One
// that keeps it Terminating (the namespace controller's conditions) is taken.
func TestTerminatingNamespaceStatus(t *testing.T) {
	s, _, nss := storeWithNamespace(t, "going")
	ctx := t.Context()
	if _, _, err := s.Delete(ctx, nss, "", "going", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, nss, "", "going")
	if err != nil || got.(*corev1.Namespace).Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("after the delete: %v %+v, want Terminating", err, got)
	}
	phase := func(p corev1.NamespacePhase) func(runtime.Object) (runtime.Object, error) {
		return func(cur runtime.Object) (runtime.Object, error) {
			cur.(*corev1.Namespace).Status.Phase = p
			return cur, nil
		}
	}
	_, err = s.Update(ctx, nss, "", "going", UpdateOptions{Subresource: "status"}, phase(corev1.NamespaceActive))
	want := `Namespace "going" is invalid: status.Phase: Invalid value: "Active": may only be 'Terminating' if ` + "`deletionTimestamp`" + ` is not empty`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("status write of Active: %v, want 422 %q", err, want)
	}
	if _, err := s.Update(ctx, nss, "", "going", UpdateOptions{Subresource: "status"}, phase(corev1.NamespaceTerminating)); err != nil {
		t.Errorf("status write of Terminating: %v", err)
	}
}

// A namespace's deletion stores only its deletion timestamp (no grace period), and a
// deletion asked again while its spec.finalizers hold it answers with the namespace as it
// is, writing nothing, as kube-apiserver's namespace storage does since 1.17.
func TestDeletingANamespaceAgain(t *testing.T) {
	s, _, nss := storeWithNamespace(t, "going")
	ctx := t.Context()
	first, _, err := s.Delete(ctx, nss, "", "going", metav1.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := MustMeta(first); m.GetDeletionTimestamp() == nil || m.GetDeletionGracePeriodSeconds() != nil {
		t.Errorf("marked namespace: timestamp %v, grace %v; want a timestamp and no grace period", m.GetDeletionTimestamp(), m.GetDeletionGracePeriodSeconds())
	}
	again, _, err := s.Delete(ctx, nss, "", "going", metav1.DeleteOptions{})
	if err != nil {
		t.Fatalf("second deletion: %v, want the namespace", err)
	}
	if rv, want := MustMeta(again).GetResourceVersion(), MustMeta(first).GetResourceVersion(); rv != want {
		t.Errorf("second deletion wrote the namespace: version %s, want %s", rv, want)
	}
}

// storeWithNamespace is a test store holding one namespace, named name.
func storeWithNamespace(t *testing.T, name string) (*Store, store.Interface, *registry.Resource) {
	s, st := newTestStore(t, Admission{})
	nss := s.resource(t, "namespaces")
	if _, err := s.Create(t.Context(), nss, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return s, st, nss
}
