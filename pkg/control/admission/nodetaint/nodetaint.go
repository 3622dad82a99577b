// Package nodetaint is Kubernetes' TaintNodesByCondition admission plugin: a node is
// created with the not-ready NoSchedule taint, so no pod is scheduled to it before the node
// lifecycle controller has seen it Ready and taken the taint away.
package nodetaint

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
)

// Plugin has no state.
type Plugin struct{}

// Admit adds the not-ready NoSchedule taint to a node being created that lacks it.
func (Plugin) Admit(_ context.Context, a *generic.Attributes) error {
	if a.Operation != generic.Create || !admission.Is(a, "nodes") {
		return nil
	}
	node, ok := a.Object.(*corev1.Node)
	if !ok {
		return nil
	}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&notReady) {
			return nil
		}
	}
	node.Spec.Taints = append(node.Spec.Taints, notReady)
	return nil
}
