// Package nodeports is kube-scheduler's NodePorts filter: a pod's host ports must be free
// on the node (same protocol and port clash when the IPs are equal or either is 0.0.0.0).
package nodeports

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
)

// Name is the plugin's name in profiles.
const Name = "NodePorts"

// ErrReason is kube-scheduler's wording.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

const stateKey = Name + "/preFilter"

// Plugin is the filter.
type Plugin struct{}

// New makes the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

func (Plugin) Name() string { return Name }

// PreFilter lists the pod's host ports; Skip when it has none.
func (Plugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ framework.NodeLister) *framework.Status {
	ports := framework.PodHostPorts(pod.Pod)
	if len(ports) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, ports)
	return nil
}

func (Plugin) Filter(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	ports, _ := framework.ReadAs[[]framework.HostPort](state, stateKey)
	for _, p := range ports {
		if n.UsedPorts.Conflicts(p) {
			return framework.NewStatus(framework.Unschedulable, ErrReason)
		}
	}
	return nil
}

func (Plugin) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Kind: framework.KindPod, Action: framework.Delete}, {Kind: framework.KindNode, Action: framework.Add}}
}
