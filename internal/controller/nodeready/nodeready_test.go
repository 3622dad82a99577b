package nodeready

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestReady(t *testing.T) {
	node := func(conds ...corev1.NodeCondition) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: conds}}
	}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"no conditions", node(), false},
		{"Ready True", node(corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}), true},
		{"Ready False", node(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse}), false},
		{"Ready Unknown", node(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}), false},
		{"only another condition True", node(corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue}), false},
	} {
		if got := Ready(tc.node); got != tc.want {
			t.Errorf("%s: Ready = %v, want %v", tc.name, got, tc.want)
		}
	}
}
