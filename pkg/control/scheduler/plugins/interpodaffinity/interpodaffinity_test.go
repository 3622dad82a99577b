package interpodaffinity

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const zone = corev1.LabelTopologyZone

func term(app, key string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: key}
}

func withAnti(p *corev1.Pod, terms ...corev1.PodAffinityTerm) *corev1.Pod {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	return p
}

func withAffinity(p *corev1.Pod, terms ...corev1.PodAffinityTerm) *corev1.Pod {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	return p
}

func TestFilter(t *testing.T) {
	nodes := []*corev1.Node{
		schedtest.Node("a1", map[string]string{zone: "a"}), schedtest.Node("a2", map[string]string{zone: "a"}),
		schedtest.Node("b1", map[string]string{zone: "b"}), schedtest.Node("nozone", nil),
	}
	web := map[string]string{"app": "web"}
	otherNS := schedtest.On(schedtest.Pod("x", web, 0), "b1")
	otherNS.Namespace = "other"
	for _, tc := range []struct {
		name     string
		existing []*corev1.Pod
		pod      *corev1.Pod
		want     map[string]string
	}{
		{"anti-affinity on hostname keeps one per node",
			[]*corev1.Pod{schedtest.On(schedtest.Pod("w1", web, 0), "a1")},
			withAnti(schedtest.Pod("w2", web, 0), term("web", corev1.LabelHostname)),
			map[string]string{"a1": ErrReasonAntiAffinityRulesNotMatch, "a2": "", "b1": "", "nozone": ""}},
		{"anti-affinity within a zone excludes the whole zone; a node without the key is free",
			[]*corev1.Pod{schedtest.On(schedtest.Pod("w1", web, 0), "a1")},
			withAnti(schedtest.Pod("w2", web, 0), term("web", zone)),
			map[string]string{"a1": ErrReasonAntiAffinityRulesNotMatch, "a2": ErrReasonAntiAffinityRulesNotMatch, "b1": "", "nozone": ""}},
		{"an existing pod's anti-affinity keeps matching pods out of its zone",
			[]*corev1.Pod{withAnti(schedtest.On(schedtest.Pod("db", map[string]string{"app": "db"}, 0), "b1"), term("web", zone))},
			schedtest.Pod("w", web, 0),
			map[string]string{"a1": "", "a2": "", "b1": ErrReasonExistingAntiAffinityRulesNotMatch, "nozone": ""}},
		{"anti-affinity looks at the pod's own namespace only",
			[]*corev1.Pod{otherNS},
			withAnti(schedtest.Pod("w2", web, 0), term("web", zone)),
			map[string]string{"a1": "", "a2": "", "b1": "", "nozone": ""}},
		{"affinity needs a matching pod in the node's zone",
			[]*corev1.Pod{schedtest.On(schedtest.Pod("c", map[string]string{"app": "cache"}, 0), "b1")},
			withAffinity(schedtest.Pod("w", web, 0), term("cache", zone)),
			map[string]string{"a1": ErrReasonAffinityRulesNotMatch, "a2": ErrReasonAffinityRulesNotMatch, "b1": "", "nozone": ErrReasonAffinityRulesNotMatch}},
		{"the first pod of a group with affinity to itself goes anywhere with the key",
			nil,
			withAffinity(schedtest.Pod("w", web, 0), term("web", zone)),
			map[string]string{"a1": "", "a2": "", "b1": "", "nozone": ErrReasonAffinityRulesNotMatch}},
	} {
		snap := schedtest.Snapshot(nodes, tc.existing...)
		p, _ := New(schedtest.NewHandle(snap))
		got := schedtest.Filter(p, snap, tc.pod)
		for node, want := range tc.want {
			if got[node] != want {
				t.Errorf("%s: node %s: %q, want %q", tc.name, node, got[node], want)
			}
		}
	}
}

func TestNamespaceSelector(t *testing.T) {
	nodes := []*corev1.Node{schedtest.Node("n1", nil), schedtest.Node("n2", nil)}
	x := schedtest.On(schedtest.Pod("x", map[string]string{"app": "web"}, 0), "n1")
	x.Namespace = "prod"
	prod := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{"env": "prod"}}}
	tm := term("web", corev1.LabelHostname)
	tm.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	snap := schedtest.Snapshot(nodes, x)
	p, _ := New(schedtest.NewHandle(snap, prod))
	got := schedtest.Filter(p, snap, withAnti(schedtest.Pod("w", map[string]string{"app": "web"}, 0), tm))
	if got["n1"] != ErrReasonAntiAffinityRulesNotMatch || got["n2"] != "" {
		t.Errorf("namespaceSelector: %v", got)
	}
}

func TestScorePreferred(t *testing.T) {
	nodes := []*corev1.Node{schedtest.Node("a1", map[string]string{zone: "a"}), schedtest.Node("b1", map[string]string{zone: "b"})}
	snap := schedtest.Snapshot(nodes, schedtest.On(schedtest.Pod("c", map[string]string{"app": "cache"}, 0), "b1"))
	pod := schedtest.Pod("w", nil, 0)
	pod.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 50, PodAffinityTerm: term("cache", zone)}}}}
	p, _ := New(schedtest.NewHandle(snap))
	if s := schedtest.Score(p, snap, pod); s["b1"] != 100 || s["a1"] != 0 {
		t.Errorf("preferred affinity: %v", s)
	}
	pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 50, PodAffinityTerm: term("cache", zone)}}}}
	if s := schedtest.Score(p, snap, pod); s["a1"] != 100 || s["b1"] != 0 {
		t.Errorf("preferred anti-affinity: %v", s)
	}
}
