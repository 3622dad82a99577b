package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFilters(t *testing.T) {
	node := func(name string, labels map[string]string, taints ...corev1.Taint) *nodeInfo {
		return &nodeInfo{node: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       corev1.NodeSpec{Taints: taints},
			Status: corev1.NodeStatus{
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2"), corev1.ResourceCPU: resource.MustParse("1")},
			},
		}, requested: corev1.ResourceList{}}
	}
	gpu := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	pinned := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}}}
	zoned := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"b"}}}}}}}}
	cordoned := node("n1", nil)
	cordoned.node.Spec.Unschedulable = true
	full := node("n1", nil)
	full.pods = 2
	busy := node("n1", nil)
	busy.requested = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("800m")}
	cpuPod := corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")}}}},
		InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}
	for _, tc := range []struct {
		name string
		pod  corev1.PodSpec
		node *nodeInfo
		want string
	}{
		{"nodeSelector matches", corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}, node("n1", map[string]string{"disk": "ssd"}), ""},
		{"nodeSelector misses", corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}, node("n1", nil), "node(s) didn't match Pod's node affinity/selector"},
		{"matchFields names the node", corev1.PodSpec{Affinity: pinned}, node("n1", nil), ""},
		{"matchFields names another node", corev1.PodSpec{Affinity: pinned}, node("n2", nil), "node(s) didn't match Pod's node affinity/selector"},
		{"NotIn expression excludes", corev1.PodSpec{Affinity: zoned}, node("n1", map[string]string{"zone": "b"}), "node(s) didn't match Pod's node affinity/selector"},
		{"NotIn expression admits", corev1.PodSpec{Affinity: zoned}, node("n1", map[string]string{"zone": "a"}), ""},
		{"untolerated taint", corev1.PodSpec{}, node("n1", nil, gpu), "node(s) had untolerated taint {dedicated: gpu}"},
		{"tolerated taint", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
			node("n1", nil, gpu), ""},
		{"pod slots full", corev1.PodSpec{}, full, "Too many pods"},
		{"cordoned", corev1.PodSpec{}, cordoned, "node(s) were unschedulable"},
		{"cordoned, tolerated (a DaemonSet pod)", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}},
			cordoned, ""},
		{"cpu short", cpuPod, busy, "Insufficient cpu"},
		{"init container request counts only as a maximum", cpuPod, node("n1", nil), ""},
	} {
		pod := &corev1.Pod{Spec: tc.pod}
		got := ""
		for _, f := range filters {
			if got = f(pod, tc.node); got != "" {
				break
			}
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
