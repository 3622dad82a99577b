package podtopologyspread

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const zone = corev1.LabelTopologyZone

var web = map[string]string{"app": "web"}

// webSet is the ReplicaSet selecting web, whose pods the system default constraints spread.
func webSet() *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: web}}}
}

// hostAndZone is spread's zone constraint (maxSkew 2) followed by a hostname one (maxSkew 1).
func hostAndZone(when corev1.UnsatisfiableConstraintAction, mod func(*corev1.TopologySpreadConstraint)) *corev1.Pod {
	p := spread(2, when, mod)
	host := p.Spec.TopologySpreadConstraints[0]
	host.TopologyKey, host.MaxSkew = corev1.LabelHostname, 1
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, host)
	return p
}

// inNamespace is pod moved to namespace ns.
func inNamespace(pod *corev1.Pod, ns string) *corev1.Pod {
	pod.Namespace = ns
	return pod
}

// requiringZones is pod with a required node affinity to the zones.
func requiringZones(pod *corev1.Pod, zones ...string) *corev1.Pod {
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: zone, Operator: corev1.NodeSelectorOpIn, Values: zones}}}}}}}
	return pod
}

func spread(maxSkew int32, when corev1.UnsatisfiableConstraintAction, mod func(*corev1.TopologySpreadConstraint)) *corev1.Pod {
	p := schedtest.Pod("new", web, 0)
	c := corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: zone, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: web}}
	if mod != nil {
		mod(&c)
	}
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c}
	return p
}

func TestFilter(t *testing.T) {
	nodes := []*corev1.Node{
		schedtest.Node("a1", map[string]string{zone: "a"}), schedtest.Node("a2", map[string]string{zone: "a"}),
		schedtest.Node("b1", map[string]string{zone: "b", "disk": "hdd"}), schedtest.Node("nozone", nil),
	}
	// zone a holds 2 web pods, zone b 1 (and one pod that does not match).
	existing := []*corev1.Pod{
		schedtest.On(schedtest.Pod("w1", web, 0), "a1"), schedtest.On(schedtest.Pod("w2", web, 0), "a2"),
		schedtest.On(schedtest.Pod("w3", web, 0), "b1"), schedtest.On(schedtest.Pod("other", nil, 0), "b1"),
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want map[string]string
	}{
		{"maxSkew 1: only the emptier zone", spread(1, corev1.DoNotSchedule, nil),
			map[string]string{"a1": ErrReasonConstraintsNotMatch, "a2": ErrReasonConstraintsNotMatch, "b1": "", "nozone": ErrReasonNodeLabelNotMatch}},
		{"maxSkew 2: both zones", spread(2, corev1.DoNotSchedule, nil),
			map[string]string{"a1": "", "a2": "", "b1": "", "nozone": ErrReasonNodeLabelNotMatch}},
		{"minDomains 3 with two zones: the missing one counts as empty", spread(2, corev1.DoNotSchedule, func(c *corev1.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](3) }),
			map[string]string{"a1": ErrReasonConstraintsNotMatch, "a2": ErrReasonConstraintsNotMatch, "b1": "", "nozone": ErrReasonNodeLabelNotMatch}},
		{"ScheduleAnyway does not filter", spread(1, corev1.ScheduleAnyway, nil),
			map[string]string{"a1": "", "a2": "", "b1": "", "nozone": ""}},
	} {
		snap := schedtest.Snapshot(nodes, existing...)
		p, _ := New(schedtest.NewHandle(snap))
		got := schedtest.Filter(p, snap, tc.pod)
		for node, want := range tc.want {
			if got[node] != want {
				t.Errorf("%s: node %s: %q, want %q", tc.name, node, got[node], want)
			}
		}
	}

	// nodeAffinityPolicy Honor (default): zone b is outside the pod's node affinity, so the
	// minimum is zone a's 2 and zone a is allowed; Ignore counts zone b's 1.
	pinned := func(policy corev1.NodeInclusionPolicy) *corev1.Pod {
		p := spread(1, corev1.DoNotSchedule, func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &policy })
		p.Spec.NodeSelector = map[string]string{zone: "a"}
		return p
	}
	snap := schedtest.Snapshot(nodes, existing...)
	p, _ := New(schedtest.NewHandle(snap))
	if got := schedtest.Filter(p, snap, pinned(corev1.NodeInclusionPolicyHonor))["a1"]; got != "" {
		t.Errorf("nodeAffinityPolicy Honor: a1 %q, want it allowed", got)
	}
	if got := schedtest.Filter(p, snap, pinned(corev1.NodeInclusionPolicyIgnore))["a1"]; got != ErrReasonConstraintsNotMatch {
		t.Errorf("nodeAffinityPolicy Ignore: a1 %q, want it refused", got)
	}

	// nodeTaintsPolicy Honor: a tainted zone b node does not count.
	tainted := schedtest.Node("b1", map[string]string{zone: "b"})
	tainted.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	snap = schedtest.Snapshot([]*corev1.Node{nodes[0], nodes[1], tainted}, existing...)
	p, _ = New(schedtest.NewHandle(snap))
	honor := corev1.NodeInclusionPolicyHonor
	if got := schedtest.Filter(p, snap, spread(1, corev1.DoNotSchedule, func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &honor }))["a1"]; got != "" {
		t.Errorf("nodeTaintsPolicy Honor: a1 %q, want allowed", got)
	}
}

func TestScore(t *testing.T) {
	nodes := []*corev1.Node{schedtest.Node("a1", map[string]string{zone: "a"}), schedtest.Node("b1", map[string]string{zone: "b"}), schedtest.Node("c1", map[string]string{zone: "c"})}
	snap := schedtest.Snapshot(nodes,
		schedtest.On(schedtest.Pod("w1", web, 0), "a1"), schedtest.On(schedtest.Pod("w2", web, 0), "a1"), schedtest.On(schedtest.Pod("w3", web, 0), "b1"))
	p, _ := New(schedtest.NewHandle(snap))
	s := schedtest.Score(p, snap, spread(1, corev1.ScheduleAnyway, nil))
	if !(s["c1"] > s["b1"] && s["b1"] > s["a1"]) || s["c1"] != 100 {
		t.Errorf("soft spread scores %v, want c1 (empty, 100) > b1 > a1", s)
	}
}

func TestSystemDefaults(t *testing.T) {
	// No zone labels (as on minilab): the pods of a ReplicaSet still spread over hosts.
	nodes := []*corev1.Node{schedtest.Node("n1", nil), schedtest.Node("n2", nil)}
	snap := schedtest.Snapshot(nodes, schedtest.On(schedtest.Pod("w1", web, 0), "n1"), schedtest.On(schedtest.Pod("w2", web, 0), "n1"))
	h := schedtest.NewHandle(snap, webSet())
	p, _ := New(h)
	s := schedtest.Score(p, snap, schedtest.Pod("w3", web, 0))
	if !(s["n2"] > s["n1"]) {
		t.Errorf("a ReplicaSet's pod without constraints: %v, want n2 (no replica yet) above n1", s)
	}
	// A pod nothing selects gets no default spreading.
	if s := schedtest.Score(p, snap, schedtest.Pod("lonely", map[string]string{"app": "lonely"}, 0)); s["n1"] != s["n2"] {
		t.Errorf("unselected pod: %v, want equal scores", s)
	}
}
