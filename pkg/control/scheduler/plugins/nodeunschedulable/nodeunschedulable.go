// Package nodeunschedulable is kube-scheduler's NodeUnschedulable filter: a cordoned node
// (spec.unschedulable) takes only pods that tolerate its unschedulable taint.
package nodeunschedulable

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// Name is the plugin's name in profiles.
const Name = "NodeUnschedulable"

// ErrReason is kube-scheduler's wording.
const ErrReason = "node(s) were unschedulable"

// Plugin is the filter.
type Plugin struct{}

// New makes the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

func (Plugin) Name() string { return Name }

var taint = &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

func (Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	if n.Unschedulable && !corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Pod.Spec.Tolerations, taint, false) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}

func (Plugin) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Kind: framework.KindNode, Action: framework.Add | framework.UpdateNodeTaint}}
}
