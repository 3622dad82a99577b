// Package nodename is kube-scheduler's NodeName filter: a pod naming a node in spec.nodeName
// fits only that node.
package nodename

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
)

// Name is the plugin's name in profiles.
const Name = "NodeName"

// ErrReason is kube-scheduler's wording.
const ErrReason = "node(s) didn't match the requested node name"

// Plugin is the filter.
type Plugin struct{}

// New makes the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

func (Plugin) Name() string { return Name }

func (Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	if pod.Pod.Spec.NodeName != "" && pod.Pod.Spec.NodeName != n.Node().Name {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}

func (Plugin) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Kind: framework.KindNode, Action: framework.Add}}
}
