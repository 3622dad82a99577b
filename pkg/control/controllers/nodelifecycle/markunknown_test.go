package nodelifecycle

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

// As kube's node lifecycle controller: a node that never posted its status has the startup
// grace period from its creation, then its conditions say the kubelet never posted them;
// a silent node's conditions become Unknown, except those already Unknown, which keep
// their reason and transition time.
func TestMarkUnknownAsKube(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	created := metav1.NewTime(t0)
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	fresh := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fresh", CreationTimestamp: created}}
	silent := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "silent", CreationTimestamp: earlier}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: created, LastTransitionTime: earlier},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionUnknown, Reason: "Mine", LastTransitionTime: earlier},
	}}}
	client := fake.NewClientset(fresh, silent)
	c, err := New(client, informers.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(10), record.NewFakeRecorder(10),
		Options{MonitorPeriod: time.Second, GracePeriod: 40 * time.Second}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(t0.Add(50 * time.Second))
	c.clock = clk
	conditions := func(name string) map[corev1.NodeConditionType]corev1.NodeCondition {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[corev1.NodeConditionType]corev1.NodeCondition{}
		for _, cond := range n.Status.Conditions {
			out[cond.Type] = cond
		}
		return out
	}
	for _, n := range []*corev1.Node{fresh, silent} {
		if err := c.monitor(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if got := conditions("fresh"); len(got) != 0 {
		t.Errorf("a node 50 s old that never posted its status has conditions %v, want none before the startup grace period (60 s) ends", got)
	}
	clk.Step(11 * time.Second)
	for _, n := range []*corev1.Node{fresh, silent} {
		if err := c.monitor(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	now := metav1.NewTime(clk.Now())
	for _, typ := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		want := corev1.NodeCondition{Type: typ, Status: corev1.ConditionUnknown, Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
			LastHeartbeatTime: created, LastTransitionTime: now}
		if got := conditions("fresh")[typ]; !got.LastHeartbeatTime.Equal(&want.LastHeartbeatTime) || !got.LastTransitionTime.Equal(&want.LastTransitionTime) ||
			got.Status != want.Status || got.Reason != want.Reason || got.Message != want.Message {
			t.Errorf("fresh node's %s: %+v, want %+v", typ, got, want)
		}
	}
	if r := conditions("silent")[corev1.NodeReady]; r.Status != corev1.ConditionTrue {
		t.Errorf("silent node first seen 11 s ago: Ready %+v, want still True", r)
	}
	clk.Step(30 * time.Second) // silent was first seen 41 s ago, past its 40 s grace period
	if err := c.monitor(ctx, silent); err != nil {
		t.Fatal(err)
	}
	now = metav1.NewTime(clk.Now())
	got := conditions("silent")
	if r := got[corev1.NodeReady]; r.Status != corev1.ConditionUnknown || r.Reason != "NodeStatusUnknown" || r.Message != "Kubelet stopped posting node status." ||
		!r.LastTransitionTime.Equal(&now) || !r.LastHeartbeatTime.Equal(&created) {
		t.Errorf("silent node's Ready: %+v, want Unknown NodeStatusUnknown since now, its heartbeat kept", r)
	}
	if m := got[corev1.NodeMemoryPressure]; m.Reason != "Mine" || !m.LastTransitionTime.Equal(&earlier) {
		t.Errorf("silent node's MemoryPressure, already Unknown: %+v, want it kept", m)
	}
	if d := got[corev1.NodeDiskPressure]; d.Reason != "NodeStatusNeverUpdated" {
		t.Errorf("silent node's DiskPressure, never posted: %+v, want NodeStatusNeverUpdated", d)
	}
}
