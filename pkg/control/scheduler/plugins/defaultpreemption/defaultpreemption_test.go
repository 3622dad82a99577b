package defaultpreemption

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/interpodaffinity"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/noderesources"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/tainttoleration"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
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
	// The victim was told why before it went, as kube-scheduler does.
	if actions := h.Client().(*fake.Clientset).Actions(); len(actions) < 2 || actions[0].GetSubresource() != "status" || actions[1].GetVerb() != "delete" {
		t.Fatalf("calls %v, want the status patch then the delete", actions)
	} else if patch := string(actions[0].(clienttesting.PatchAction).GetPatch()); !strings.Contains(patch, `"type":"DisruptionTarget"`) ||
		!strings.Contains(patch, `"reason":"PreemptionByScheduler"`) || !strings.Contains(patch, `"message":"default-scheduler: preempting to accommodate a higher priority pod"`) {
		t.Errorf("status patch %s", patch)
	}
	// Priority 3 cannot evict mid; still n1 (low1 as the snapshot still has it).
	_ = h.Client().(*fake.Clientset).Tracker().Add(pods[0])
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

// TestPreemptionAntiAffinity evicts a pod that anti-affinity keeps the preemptor from: the
// what-if snapshot must hide the victim from InterPodAffinity's index of placed pods and
// terms, both ways round.
func TestPreemptionAntiAffinity(t *testing.T) {
	anti := func(p *corev1.Pod, app string) *corev1.Pod {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: corev1.LabelHostname}}}}
		return p
	}
	for _, tc := range []struct {
		name          string
		victim, other *corev1.Pod
		preemptor     *corev1.Pod
	}{
		{"the victim's term selects the preemptor",
			anti(schedtest.Pod("low", map[string]string{"app": "db"}, 0), "web"),
			schedtest.Pod("keep", map[string]string{"app": "db"}, 0),
			schedtest.Pod("hi", map[string]string{"app": "web"}, 0)},
		{"the preemptor's term selects the victim",
			schedtest.Pod("low", map[string]string{"app": "db"}, 0),
			schedtest.Pod("keep", map[string]string{"app": "cache"}, 0),
			anti(schedtest.Pod("hi", map[string]string{"app": "web"}, 0), "db")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := []*corev1.Pod{prio(schedtest.On(tc.victim, "n1"), 1), prio(schedtest.On(tc.other, "n1"), 20)}
			snap := schedtest.Snapshot([]*corev1.Node{schedtest.Node("n1", nil)}, pods...)
			h := schedtest.NewHandle(snap)
			ipa, _ := interpodaffinity.New(h)
			h.SetFramework(&framework.Framework{PreFilters: []framework.PreFilterPlugin{ipa.(framework.PreFilterPlugin)}, Filters: []framework.FilterPlugin{ipa.(framework.FilterPlugin)}, Parallelism: 1})
			pl, _ := New(h)
			p := pl.(*Plugin)
			var victims []string
			p.OnPreempt = func(v, _ *corev1.Pod, node string) { victims = append(victims, v.Name+"@"+node) }
			statuses := framework.NodeStatuses{"n1": framework.NewStatus(framework.Unschedulable, "anti-affinity")}
			node, st := p.PostFilter(context.Background(), nil, framework.NewPodInfo(prio(tc.preemptor, 10)), statuses)
			if !st.IsSuccess() || node != "n1" || len(victims) != 1 || victims[0] != "low@n1" {
				t.Fatalf("nominated %q (%v), victims %v; want n1 with low only", node, st.Message(), victims)
			}
		})
	}
}
