package nodeaffinity

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
)

func TestNodeAffinity(t *testing.T) {
	snap := schedtest.Snapshot([]*corev1.Node{schedtest.Node("n1", map[string]string{"disk": "ssd", "zone": "a"}), schedtest.Node("n2", map[string]string{"zone": "b"})})
	req := func(t corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{t}}}}
	}
	for _, tc := range []struct {
		name   string
		spec   corev1.PodSpec
		n1, n2 string
	}{
		{"no constraint", corev1.PodSpec{}, "", ""},
		{"nodeSelector", corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}, "", ErrReasonPod},
		{"matchFields names the node (DaemonSet pods)", corev1.PodSpec{Affinity: req(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n2"}}}})}, ErrReasonPod, ""},
		{"NotIn", corev1.PodSpec{Affinity: req(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"b"}}}})}, "", ErrReasonPod},
	} {
		pod := schedtest.Pod("p", nil, 0)
		pod.Spec.NodeSelector, pod.Spec.Affinity = tc.spec.NodeSelector, tc.spec.Affinity
		got := schedtest.Filter(Plugin{}, snap, pod)
		if got["n1"] != tc.n1 || got["n2"] != tc.n2 {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
	pod := schedtest.Pod("p", nil, 0)
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
		{Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}}}}}}
	if s := schedtest.Score(Plugin{}, snap, pod); s["n2"] != 100 || s["n1"] != 0 {
		t.Errorf("preferred: %v", s)
	}
}
