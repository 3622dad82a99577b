package core_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	v1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"
)

// TestPodDeletionSteps: a pod deletion goes as kube-apiserver's store and pod strategy take
// it (rest.BeforeDelete, Store.updateForGracefulDeletionAndFinalizers): every pod deletion
// first stores the pod with its deletionTimestamp, so a watcher sees MODIFIED before
// DELETED even with no grace (kubectl delete --force --grace-period=0, an unscheduled pod,
// a terminating pod hurried); a shorter grace period moves the deletionTimestamp back from
// the first one, never past now; only the first deletion counts a generation; a negative
// grace period is 1 s; a finalizer keeps a force-deleted pod, marked with grace 0.
func TestPodDeletionSteps(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, pods := context.Background(), c.Client.CoreV1().Pods(c.Namespace)
	create := func(name, node string, finalizers ...string) *corev1.Pod {
		t.Helper()
		p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	del := func(name string, grace *int64) {
		t.Helper()
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: grace}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) *corev1.Pod {
		t.Helper()
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	for _, tc := range []struct {
		name, node string
		first      *int64 // a graceful deletion before the one watched
	}{
		{name: "forced", node: "node-1"},
		{name: "unscheduled"},
		{name: "hurried", node: "node-1", first: ptr.To[int64](30)},
	} {
		p := create(tc.name, tc.node)
		if tc.first != nil {
			del(tc.name, tc.first)
			p = get(tc.name)
		}
		if got := watchDeletion(t, pods, p, ptr.To[int64](0)); got != "MODIFIED grace 0, DELETED" {
			t.Errorf("%s: a watcher saw %s, want MODIFIED grace 0, DELETED", tc.name, got)
		}
	}

	p := create("preconditioned", "node-1")
	if err := pods.Delete(ctx, "preconditioned", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
		Preconditions: &metav1.Preconditions{ResourceVersion: &p.ResourceVersion}}); err != nil {
		t.Errorf("force delete with the pod's resourceVersion as precondition: %v", err)
	}
	if _, err := pods.Get(ctx, "preconditioned", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("force-deleted with a precondition: still there (%v)", err)
	}

	create("shortened", "node-1")
	del("shortened", ptr.To[int64](60))
	first := get("shortened")
	del("shortened", ptr.To[int64](40))
	p = get("shortened")
	if want := first.DeletionTimestamp.Add(-20 * time.Second); !p.DeletionTimestamp.Time.Equal(want) || *p.DeletionGracePeriodSeconds != 40 {
		t.Errorf("shortened to 40 s: deletionTimestamp %v grace %d, want %v (the first one less 20 s) and 40",
			p.DeletionTimestamp, *p.DeletionGracePeriodSeconds, want)
	}
	if p.Generation != first.Generation || first.Generation != 2 {
		t.Errorf("generation %d after the first deletion and %d after the second, want 2 and 2", first.Generation, p.Generation)
	}
	del("shortened", nil)
	if again := get("shortened"); again.ResourceVersion != p.ResourceVersion {
		t.Errorf("a deletion asking no shorter grace changed the pod: %v grace %d", again.DeletionTimestamp, *again.DeletionGracePeriodSeconds)
	}

	create("negative", "node-1")
	del("negative", ptr.To[int64](-1))
	if p := get("negative"); *p.DeletionGracePeriodSeconds != 1 {
		t.Errorf("grace period -1: deletionGracePeriodSeconds %d, want 1", *p.DeletionGracePeriodSeconds)
	}

	create("held", "node-1", "example.com/hold")
	del("held", ptr.To[int64](0))
	if p := get("held"); p.DeletionTimestamp == nil || *p.DeletionGracePeriodSeconds != 0 {
		t.Errorf("force-deleted pod with a finalizer: deletionTimestamp %v grace %v, want set and 0", p.DeletionTimestamp, p.DeletionGracePeriodSeconds)
	}
	if _, err := pods.Patch(ctx, "held", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod stayed once its finalizer went: %v", err)
	}
}

// watchDeletion deletes p with grace and tells the events a watcher of it saw until it went
// (of the MODIFIED ones, those of the pod marked for deletion: the scheduler may write too).
func watchDeletion(t *testing.T, pods v1.PodInterface, p *corev1.Pod, grace *int64) string {
	t.Helper()
	w, err := pods.Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + p.Name, ResourceVersion: p.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := pods.Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: grace}); err != nil {
		t.Fatal(err)
	}
	var seen string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			got, _ := ev.Object.(*corev1.Pod)
			if ev.Type == watch.Modified && (got == nil || got.DeletionTimestamp == nil) {
				continue
			}
			if seen != "" {
				seen += ", "
			}
			seen += string(ev.Type)
			if ev.Type == watch.Modified && got.DeletionGracePeriodSeconds != nil {
				seen += fmt.Sprintf(" grace %d", *got.DeletionGracePeriodSeconds)
			}
			if ev.Type == watch.Deleted {
				return seen
			}
		case <-timeout:
			return seen + " and nothing more in 10 s"
		}
	}
}
