package podgc

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func pod(name, node string, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 1},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	return p
}

func node(name string, ready bool, taints ...corev1.Taint) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
}

// As kube's PodGC: a pod bound to a node that does not exist stays through the 40 s
// quarantine, then is marked Failed with DisruptionTarget DeletionByPodGC ("PodGC: node no
// longer exists") and deleted; a terminating pod on a NotReady out-of-service node is
// deleted at once; pods of a ready node, or of a NotReady node without the taint, stay.
func TestGC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	outOfService := corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}
	objs := []runtime.Object{
		node("up", true), node("down", false), node("shut", false, outOfService),
		pod("ghost", "node-9", false), pod("fine", "up", false), pod("stuck", "down", true), pod("shutdown", "shut", true),
		pod("running-on-shut", "shut", false),
	}
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(time.Now())
	c := New(client, f.Core().V1().Pods(), f.Core().V1().Nodes(), 0, clk, slog.New(slog.DiscardHandler))
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	defer func() { cancel(); f.Shutdown() }()

	deleted, graces := map[string]*corev1.Pod{}, map[string]*int64{}
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteActionImpl)
		if o, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "default", d.Name); err == nil {
			deleted[d.Name], graces[d.Name] = o.(*corev1.Pod), d.DeleteOptions.GracePeriodSeconds
		}
		return false, nil, nil
	})
	exists := func(name string) bool {
		_, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return !apierrors.IsNotFound(err)
	}
	c.gc(ctx)
	if !exists("ghost") {
		t.Fatal("the orphaned pod was deleted before its node's quarantine ended")
	}
	if exists("shutdown") {
		t.Error("the terminating pod of an out-of-service node is still there")
	}
	for _, name := range []string{"fine", "stuck", "running-on-shut"} {
		if !exists(name) {
			t.Errorf("pod %s was deleted", name)
		}
	}
	clk.Step(quarantineTime)
	c.gc(ctx)
	if exists("ghost") {
		t.Error("the orphaned pod is still there after the quarantine")
	}
	ghost := deleted["ghost"]
	if ghost == nil || ghost.Status.Phase != corev1.PodFailed {
		t.Fatalf("the orphaned pod when deleted: %+v, want phase Failed", ghost)
	}
	var cond *corev1.PodCondition
	for i := range ghost.Status.Conditions {
		if ghost.Status.Conditions[i].Type == corev1.DisruptionTarget {
			cond = &ghost.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != "DeletionByPodGC" || cond.Message != "PodGC: node no longer exists" {
		t.Errorf("the orphaned pod's DisruptionTarget condition: %+v", cond)
	}
	if g := graces["ghost"]; g == nil || *g != 0 {
		t.Errorf("the orphaned pod's deletion grace period: %v, want 0", g)
	}
	if deleted["shutdown"] == nil || deleted["shutdown"].Status.Phase != corev1.PodFailed {
		t.Errorf("the out-of-service node's pod when deleted: %+v, want phase Failed", deleted["shutdown"])
	}
}

// TestGCTerminated: as kube's gcTerminated, past the threshold the finished pods go, the
// evicted ones first, then the oldest (by creation, then name); pods still running and
// pods under the threshold stay.
func TestGCTerminated(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	base := time.Now().Add(-time.Hour)
	finished := func(name string, phase corev1.PodPhase, reason string, age int) runtime.Object {
		p := pod(name, "up", false)
		p.CreationTimestamp = metav1.NewTime(base.Add(time.Duration(-age) * time.Minute))
		p.Status.Phase, p.Status.Reason = phase, reason
		return p
	}
	client := fake.NewClientset(node("up", true),
		finished("old-running", corev1.PodRunning, "", 50),
		finished("oldest", corev1.PodSucceeded, "", 40), finished("older-b", corev1.PodFailed, "", 30),
		finished("older-a", corev1.PodFailed, "", 30), finished("new", corev1.PodSucceeded, "", 1),
		finished("evicted", corev1.PodFailed, "Evicted", 0))
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f.Core().V1().Pods(), f.Core().V1().Nodes(), 2, clocktesting.NewFakeClock(time.Now()), slog.New(slog.DiscardHandler))
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	defer func() { cancel(); f.Shutdown() }()
	c.gc(ctx)
	for name, want := range map[string]bool{"old-running": true, "evicted": false, "oldest": false, "older-a": false, "older-b": true, "new": true} {
		_, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if got := !apierrors.IsNotFound(err); got != want {
			t.Errorf("pod %s kept: %v, want %v", name, got, want)
		}
	}
}
