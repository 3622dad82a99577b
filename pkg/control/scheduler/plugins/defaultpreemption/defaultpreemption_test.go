package defaultpreemption

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/noderesources"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/tainttoleration"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func prio(p *corev1.Pod, v int32) *corev1.Pod {
	p.Spec.Priority = ptr.To(v)
	return p
}

func TestPreemption(t *testing.T) {
	tainted := schedtest.Node("tainted", nil)
	tainted.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	nodes := []*corev1.Node{schedtest.Node("n1", nil), schedtest.Node("n2", nil), tainted}
	// n1: two low pods of 2 CPUs (priority 1 and 2); n2: one of 4 CPUs at priority 5.
	pods := []*corev1.Pod{
		prio(schedtest.On(schedtest.Pod("low1", nil, 2000), "n1"), 1),
		prio(schedtest.On(schedtest.Pod("low2", nil, 2000), "n1"), 2),
		prio(schedtest.On(schedtest.Pod("mid", nil, 4000), "n2"), 5),
	}
	snap := schedtest.Snapshot(nodes, pods...)
	h := schedtest.NewHandle(snap)
	fit, _ := noderesources.NewFit(nil)
	h.SetFramework(&framework.Framework{Filters: []framework.FilterPlugin{tainttoleration.Plugin{}, fit}, Parallelism: 1})
	pl, _ := New(h)
	p := pl.(*Plugin)
	var victims []string
	p.OnPreempt = func(v, _ *corev1.Pod, node string) { victims = append(victims, v.Name+"@"+node) }
	statuses := framework.NodeStatuses{
		"n1":      framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
		"n2":      framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
		"tainted": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {k: }"),
	}
	// A 2-CPU pod at priority 10: on n1 evicting low1 (priority 1) suffices; on n2 mid
	// (priority 5) would go. The lowest highest-priority victim wins: n1, low1 only.
	node, st := p.PostFilter(context.Background(), nil, framework.NewPodInfo(prio(schedtest.Pod("hi", nil, 2000), 10)), statuses)
	if !st.IsSuccess() || node != "n1" || len(victims) != 1 || victims[0] != "low1@n1" {
		t.Fatalf("nominated %q (%v), victims %v; want n1 with low1 only", node, st.Message(), victims)
	}
	// Priority 3 cannot evict mid; still n1.
	victims = nil
	if node, _ := p.PostFilter(context.Background(), nil, framework.NewPodInfo(prio(schedtest.Pod("p3", nil, 4000), 3)), statuses); node != "n1" || len(victims) != 2 {
		t.Fatalf("priority 3, 4 CPUs: %q victims %v, want n1 with both low pods", node, victims)
	}
	// Nothing lower to evict anywhere.
	_, st = p.PostFilter(context.Background(), nil, framework.NewPodInfo(prio(schedtest.Pod("p0", nil, 2000), 0)), statuses)
	want := "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
	if st.IsSuccess() || st.Message() != want {
		t.Fatalf("no victims: %q, want %q", st.Message(), want)
	}
	never := prio(schedtest.Pod("never", nil, 2000), 10)
	never.Spec.PreemptionPolicy = ptr.To(corev1.PreemptNever)
	if _, st := p.PostFilter(context.Background(), nil, framework.NewPodInfo(never), statuses); st.IsSuccess() || st.Message() != "preemption: not eligible due to preemptionPolicy=Never." {
		t.Fatalf("preemptionPolicy Never: %v", st.Message())
	}
}
