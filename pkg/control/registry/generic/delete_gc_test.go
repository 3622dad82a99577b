package generic

import (
	"errors"
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/store"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/utils/ptr"
)

type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

// A deletion sets the garbage collector's finalizers as kube-apiserver's store does: the
// request's propagation policy replaces a collector finalizer the object already has (also
// on an object already being deleted), Background removes one, and no policy keeps it.
func TestDeleteSetsCollectorFinalizers(t *testing.T) {
	s, st := newTestStore(t, Admission{})
	ctx := t.Context()
	cms := s.resource(t, "configmaps")
	create := func(name string, finalizers ...string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Finalizers: finalizers}}
		if _, err := s.Create(ctx, cms, cm, CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(name string, policy metav1.DeletionPropagation) []string {
		t.Helper()
		opts := metav1.DeleteOptions{}
		if policy != "" {
			opts.PropagationPolicy = &policy
		}
		out, _, err := s.Delete(ctx, cms, "default", name, opts)
		if err != nil {
			t.Fatal(err)
		}
		f := MustMeta(out).GetFinalizers()
		slices.Sort(f)
		return f
	}
	create("held", "example.com/hold", metav1.FinalizerOrphanDependents)
	if got := del("held", metav1.DeletePropagationForeground); !slices.Equal(got, []string{"example.com/hold", metav1.FinalizerDeleteDependents}) {
		t.Errorf("foreground over orphan: finalizers %v", got)
	}
	if got := del("held", metav1.DeletePropagationOrphan); !slices.Equal(got, []string{"example.com/hold", metav1.FinalizerOrphanDependents}) {
		t.Errorf("orphan while deleting in the foreground: finalizers %v", got)
	}
	if got := del("held", ""); !slices.Equal(got, []string{"example.com/hold", metav1.FinalizerOrphanDependents}) {
		t.Errorf("no policy: finalizers %v", got)
	}

	create("orphaning", metav1.FinalizerOrphanDependents)
	del("orphaning", metav1.DeletePropagationBackground)
	if _, err := st.Get(ctx, Key(cms, "default", "orphaning")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("background deletion of an object whose only finalizer was orphan: still there (%v)", err)
	}
}

// batch/v1 Jobs orphan their pods when a deletion names no policy, with kube-apiserver's
// warning; kubectl always names one.
func TestDeleteJobOrphansByDefault(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	var w warnings
	ctx := warning.WithWarningRecorder(t.Context(), &w)
	jobs, ok := s.reg.Lookup(batchv1.SchemeGroupVersion.WithResource("jobs"))
	if !ok {
		t.Fatal("no jobs")
	}
	for _, name := range []string{"plain", "background"} {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}}}
		if _, err := s.Create(ctx, jobs, j, CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := s.Delete(ctx, jobs, "default", "plain", metav1.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f := MustMeta(out).GetFinalizers(); !slices.Equal(f, []string{metav1.FinalizerOrphanDependents}) {
		t.Errorf("job deleted with no policy: finalizers %v, want orphan", f)
	}
	want := "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"
	if !slices.Equal(w, []string{want}) {
		t.Errorf("warnings %q, want %q", w, want)
	}
	w = nil
	out, _, err = s.Delete(ctx, jobs, "default", "background", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil || len(MustMeta(out).GetFinalizers()) != 0 || len(w) != 0 {
		t.Errorf("job deleted in the background: %v, finalizers %v, warnings %q", err, MustMeta(out).GetFinalizers(), w)
	}
}

// The garbage collector leaves Events alone, so a deletion never gives one its finalizers
// (kube: the events strategy's garbage collection policy is Unsupported): it goes at once.
func TestDeleteEventSetsNoCollectorFinalizer(t *testing.T) {
	s, st := newTestStore(t, Admission{})
	ctx := t.Context()
	events := s.resource(t, "events")
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"}, Reason: "R", Type: corev1.EventTypeNormal}
	if _, err := s.Create(ctx, events, ev, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, events, "default", "e", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, Key(events, "default", "e")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("event deleted in the foreground: still there (%v)", err)
	}
}
