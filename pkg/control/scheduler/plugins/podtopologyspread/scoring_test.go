package podtopologyspread

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/cache"
	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// mixedCluster has zones of unequal fill, nodes without a zone, a node with no topology
// label at all, a tainted node, and pods the selectors must not count: other namespaces,
// other labels, terminating.
func mixedCluster() ([]*corev1.Node, []*corev1.Pod) {
	bare := schedtest.Node("bare", nil)
	delete(bare.Labels, corev1.LabelHostname)
	tainted := schedtest.Node("a3", map[string]string{zone: "a"})
	tainted.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	nodes := []*corev1.Node{
		schedtest.Node("a1", map[string]string{zone: "a"}), schedtest.Node("a2", map[string]string{zone: "a"}), tainted,
		schedtest.Node("b1", map[string]string{zone: "b"}), schedtest.Node("b2", map[string]string{zone: "b"}),
		schedtest.Node("c1", map[string]string{zone: "c"}),
		schedtest.Node("nozone1", nil), schedtest.Node("nozone2", nil), bare,
	}
	var pods []*corev1.Pod
	place := func(n int, node, ns string, labels map[string]string) {
		for i := 0; i < n; i++ {
			p := schedtest.On(schedtest.Pod(fmt.Sprintf("%s-%s-%d", node, ns, i), labels, 0), node)
			p.Namespace = ns
			pods = append(pods, p)
		}
	}
	for node, n := range map[string]int{"a1": 3, "a2": 1, "a3": 2, "b1": 2, "nozone1": 2, "bare": 1} {
		place(n, node, "default", web)
	}
	place(4, "c1", "other", web)
	place(3, "b2", "other", web)
	place(2, "b2", "default", map[string]string{"app": "db"})
	gone := schedtest.On(schedtest.Pod("gone", web, 0), "c1")
	gone.DeletionTimestamp = &metav1.Time{}
	pods = append(pods, gone)
	return nodes, pods
}

// TestScoresUnchanged pins the plugin's normalized scores on the mixed cluster, for the
// system defaults and for explicit constraints, over all nodes and over a feasible subset
// (the figures are those of the plugin before its scores were precomputed in PreScore).
func TestScoresUnchanged(t *testing.T) {
	all := []string{"a1", "a2", "a3", "b1", "b2", "c1", "nozone1", "nozone2", "bare"}
	honor := corev1.NodeInclusionPolicyHonor
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		feasible []string
		want     map[string]int64
	}{
		{"system defaults, every node", schedtest.Pod("new", web, 0), all,
			map[string]int64{"a1": 8, "a2": 30, "a3": 21, "b1": 47, "b2": 69, "bare": 0, "c1": 82, "nozone1": 78, "nozone2": 100}},
		{"system defaults, a feasible subset", schedtest.Pod("new", web, 0), []string{"a1", "b2", "nozone1", "bare"},
			map[string]int64{"a1": 26, "b2": 78, "bare": 0, "nozone1": 100}},
		{"zone, maxSkew 1: nodes without a zone ignored", spread(1, corev1.ScheduleAnyway, nil), all,
			map[string]int64{"a1": 0, "a2": 0, "a3": 0, "b1": 70, "b2": 70, "bare": 0, "c1": 100, "nozone1": 0, "nozone2": 0}},
		{"zone, a feasible subset", spread(1, corev1.ScheduleAnyway, nil), []string{"a2", "c1", "nozone2"},
			map[string]int64{"a2": 0, "c1": 100, "nozone2": 0}},
		{"hostname and zone", hostAndZone(corev1.ScheduleAnyway, nil), all,
			map[string]int64{"a1": 5, "a2": 29, "a3": 17, "b1": 58, "b2": 82, "bare": 0, "c1": 100, "nozone1": 0, "nozone2": 0}},
		{"hostname and zone, nodeTaintsPolicy Honor", hostAndZone(corev1.ScheduleAnyway, func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &honor }), all,
			map[string]int64{"a1": 7, "a2": 35, "a3": 57, "b1": 50, "b2": 78, "bare": 0, "c1": 100, "nozone1": 0, "nozone2": 0}},
		{"required node affinity to zones b and c: zone a counts none", requiringZones(spread(1, corev1.ScheduleAnyway, nil), "b", "c"), all,
			map[string]int64{"a1": 100, "a2": 100, "a3": 100, "b1": 0, "b2": 0, "bare": 0, "c1": 100, "nozone1": 0, "nozone2": 0}},
		{"a pod in another namespace counts that namespace's pods", inNamespace(spread(1, corev1.ScheduleAnyway, nil), "other"), all,
			map[string]int64{"a1": 100, "a2": 100, "a3": 100, "b1": 16, "b2": 16, "bare": 0, "c1": 0, "nozone1": 0, "nozone2": 0}},
		{"matchLabelKeys", spread(1, corev1.ScheduleAnyway, func(c *corev1.TopologySpreadConstraint) {
			c.LabelSelector = &metav1.LabelSelector{}
			c.MatchLabelKeys = []string{"app"}
		}), all,
			map[string]int64{"a1": 0, "a2": 0, "a3": 0, "b1": 70, "b2": 70, "bare": 0, "c1": 100, "nozone1": 0, "nozone2": 0}},
		{"minDomains does not change scores", spread(1, corev1.ScheduleAnyway, func(c *corev1.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](5) }), all,
			map[string]int64{"a1": 0, "a2": 0, "a3": 0, "b1": 70, "b2": 70, "bare": 0, "c1": 100, "nozone1": 0, "nozone2": 0}},
		{"two nodes share a hostname label", hostAndZone(corev1.ScheduleAnyway, nil), append([]string{"twin"}, all...),
			map[string]int64{"a1": 5, "a2": 29, "a3": 17, "b1": 47, "b2": 70, "bare": 0, "c1": 100, "nozone1": 0, "nozone2": 0, "twin": 35}},
		{"two nodes share a hostname label, system defaults", schedtest.Pod("new", web, 0), append(all, "twin"),
			map[string]int64{"a1": 20, "a2": 20, "a3": 10, "b1": 35, "b2": 55, "bare": 0, "c1": 80, "nozone1": 75, "nozone2": 100, "twin": 45}},
	} {
		nodes, pods := mixedCluster()
		// "twin" is a node in zone b whose hostname label is a1's: two nodes, one domain.
		if slices.Contains(tc.feasible, "twin") {
			twin := schedtest.Node("twin", map[string]string{zone: "b", corev1.LabelHostname: "a1"})
			nodes = append(nodes, twin)
			pods = append(pods, schedtest.On(schedtest.Pod("on-twin", web, 0), "twin"))
		}
		snap := schedtest.Snapshot(nodes, pods...)
		p, _ := New(schedtest.NewHandle(snap, webSet()))
		var feasible []*framework.NodeInfo
		for _, name := range tc.feasible {
			feasible = append(feasible, snap.Get(name))
		}
		fwk := &framework.Framework{Parallelism: 1, Scores: []framework.WeightedScore{{ScorePlugin: p.(framework.ScorePlugin), Weight: 1}},
			PreScores: []framework.PreScorePlugin{p.(framework.PreScorePlugin)}}
		// Twice: the second cycle reads the first one's memo.
		for range 2 {
			scores, s := fwk.RunScore(context.Background(), framework.NewCycleState(), framework.NewPodInfo(tc.pod), feasible)
			if !s.IsSuccess() {
				t.Fatalf("%s: %s", tc.name, s.Message())
			}
			got := map[string]int64{}
			for _, sc := range scores {
				got[sc.Name] = sc.Score
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("%s: scores %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}

// TestMemoFollowsTheSnapshot: a plugin that scored earlier cycles (its memo filled) scores
// as a new one after pods are placed and nodes come and go (indexes shift).
func TestMemoFollowsTheSnapshot(t *testing.T) {
	nodes, pods := mixedCluster()
	c := schedtest.Cache(nodes, pods...)
	snap := cache.NewSnapshot()
	h := schedtest.NewHandle(snap, webSet())
	used, _ := New(h)
	for i, change := range []func(){
		func() {},
		func() { c.AddPod(schedtest.On(schedtest.Pod("more", web, 0), "c1")) },
		func() { c.AddNode(schedtest.Node("a0", map[string]string{zone: "a"})) },
		func() { c.RemoveNode("a2") },
		func() { c.UpdateNode(schedtest.Node("b2", map[string]string{zone: "c"})) },
	} {
		change()
		c.UpdateSnapshot(snap)
		fresh, _ := New(h)
		for _, pod := range []*corev1.Pod{schedtest.Pod("new", web, 0), spread(1, corev1.ScheduleAnyway, nil)} {
			got, want := fmt.Sprint(schedtest.Score(used, snap, pod)), fmt.Sprint(schedtest.Score(fresh, snap, pod))
			if got != want {
				t.Errorf("step %d: scores %s, want %s", i, got, want)
			}
		}
	}
}

// TestFiltersUnchanged pins Filter's verdicts on the mixed cluster (those of the plugin
// before Filter read them by node index), for the snapshot's nodes and for copies of them
// PreFilter did not see.
func TestFiltersUnchanged(t *testing.T) {
	honor := corev1.NodeInclusionPolicyHonor
	notSelf := spread(2, corev1.DoNotSchedule, nil)
	notSelf.Labels = nil
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"zone, maxSkew 1", spread(1, corev1.DoNotSchedule, nil),
			"map[a1:S a2:S a3:S b1:S b2:S bare:L c1:- nozone1:L nozone2:L]"},
		{"zone, maxSkew 2", spread(2, corev1.DoNotSchedule, nil),
			"map[a1:S a2:S a3:S b1:S b2:S bare:L c1:- nozone1:L nozone2:L]"},
		{"zone, maxSkew 2, not selecting itself", notSelf,
			"map[a1:S a2:S a3:S b1:- b2:- bare:L c1:- nozone1:L nozone2:L]"},
		{"zone, minDomains 5", spread(3, corev1.DoNotSchedule, func(c *corev1.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](5) }),
			"map[a1:S a2:S a3:S b1:- b2:- bare:L c1:- nozone1:L nozone2:L]"},
		{"hostname and zone", hostAndZone(corev1.DoNotSchedule, nil),
			"map[a1:S a2:S a3:S b1:S b2:S bare:L c1:- nozone1:L nozone2:L]"},
		{"hostname and zone, nodeTaintsPolicy Honor", hostAndZone(corev1.DoNotSchedule, func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &honor }),
			"map[a1:S a2:S a3:S b1:S b2:S bare:L c1:- nozone1:L nozone2:L]"},
		{"required node affinity to zones b and c", requiringZones(spread(1, corev1.DoNotSchedule, nil), "b", "c"),
			"map[a1:- a2:- a3:- b1:S b2:S bare:L c1:- nozone1:L nozone2:L]"},
		{"a pod in another namespace", inNamespace(spread(1, corev1.DoNotSchedule, nil), "other"),
			"map[a1:- a2:- a3:- b1:S b2:S bare:L c1:S nozone1:L nozone2:L]"},
	} {
		nodes, pods := mixedCluster()
		snap := schedtest.Snapshot(nodes, pods...)
		p, _ := New(schedtest.NewHandle(snap))
		got := verdicts(schedtest.Filter(p, snap, tc.pod))
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		// Copies with their own Node objects: Filter goes by their labels.
		pi := framework.NewPodInfo(tc.pod)
		state := framework.NewCycleState()
		if s := p.(framework.PreFilterPlugin).PreFilter(context.Background(), state, pi, snap); !s.IsSuccess() {
			t.Fatalf("%s: %s", tc.name, s.Message())
		}
		copies := map[string]string{}
		for _, n := range snap.List() {
			c := framework.NewNodeInfo()
			c.SetNode(n.Node().DeepCopy())
			copies[n.Name] = p.(framework.FilterPlugin).Filter(context.Background(), state, pi, c).Message()
		}
		if got := verdicts(copies); got != tc.want {
			t.Errorf("%s, copies: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// verdicts shortens Filter's messages by node: "-" fits, "L" missing label, "S" skew.
func verdicts(byNode map[string]string) string {
	short := map[string]string{"": "-", ErrReasonNodeLabelNotMatch: "L", ErrReasonConstraintsNotMatch: "S"}
	out := map[string]string{}
	for n, m := range byNode {
		out[n] = short[m]
		if out[n] == "" {
			out[n] = m
		}
	}
	return fmt.Sprint(out)
}
