// Package nodedeclaredfeatures is kube-scheduler's NodeDeclaredFeatures filter (in the
// default profile of 1.36, where the NodeDeclaredFeatures gate is on): a pod that needs a
// feature of the declared-features registry fits only nodes listing it in
// status.declaredFeatures.
package nodedeclaredfeatures

import (
	"context"
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/declaredfeatures"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
)

// Name is the plugin's name in profiles.
const Name = "NodeDeclaredFeatures"

// ErrReason is kube-scheduler's wording.
const ErrReason = "node(s) didn't match Pod's required features"

const stateKey = "PreFilter" + Name

// Plugin is the filter.
type Plugin struct{}

// New makes the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

func (Plugin) Name() string { return Name }

// PreFilter infers the pod's required features once per cycle; Skip when it needs none.
func (Plugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ framework.NodeLister) *framework.Status {
	reqs, err := declaredfeatures.Framework.InferForPodScheduling(&ndf.PodInfo{Spec: &pod.Pod.Spec}, declaredfeatures.Version)
	if err != nil {
		return framework.AsStatus(err)
	}
	if reqs.IsEmpty() {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, reqs)
	return nil
}

func (Plugin) Filter(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	reqs, ok := framework.ReadAs[ndf.FeatureSet](state, stateKey)
	if !ok {
		return framework.AsStatus(fmt.Errorf("error reading %q from cycle-state", stateKey))
	}
	result, err := declaredfeatures.Framework.MatchNode(reqs, n.Node())
	if err != nil {
		return framework.AsStatus(err)
	}
	if !result.IsMatch {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}

func (Plugin) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Kind: framework.KindNode, Action: framework.Add | framework.UpdateNodeDeclaredFeature}}
}
