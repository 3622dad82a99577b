// Package nodeaffinity is kube-scheduler's NodeAffinity plugin: the pod's nodeSelector and
// required node affinity (label expressions and matchFields) filter nodes, through
// component-helpers as kube-scheduler evaluates them; preferred terms score by weight.
package nodeaffinity

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Name is the plugin's name in profiles.
const Name = "NodeAffinity"

// ErrReasonPod is kube-scheduler's wording.
const ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"

const (
	filterKey = Name + "/preFilter"
	scoreKey  = Name + "/preScore"
)

// Plugin is the filter and score.
type Plugin struct{}

// New makes the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

func (Plugin) Name() string { return Name }

// PreFilter parses the required affinity once; Skip when the pod has none.
func (Plugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ framework.NodeLister) *framework.Status {
	spec := pod.Pod.Spec
	if len(spec.NodeSelector) == 0 && (spec.Affinity == nil || spec.Affinity.NodeAffinity == nil ||
		spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil) {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(filterKey, nodeaffinity.GetRequiredNodeAffinity(pod.Pod))
	return nil
}

func (Plugin) Filter(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	req, ok := framework.ReadAs[nodeaffinity.RequiredNodeAffinity](state, filterKey)
	if !ok {
		return nil
	}
	if match, err := req.Match(n.Node()); err != nil || !match {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	return nil
}

// PreScore parses the preferred terms; Skip when there are none.
func (Plugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	a := pod.Pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return framework.AsStatus(err)
	}
	state.Write(scoreKey, terms)
	return nil
}

// Score sums the weights of the preferred terms the node matches.
func (Plugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) (int64, *framework.Status) {
	terms, ok := framework.ReadAs[*nodeaffinity.PreferredSchedulingTerms](state, scoreKey)
	if !ok {
		return 0, nil
	}
	return terms.Score(n.Node()), nil
}

func (Plugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	framework.DefaultNormalizeScore(false, scores)
	return nil
}

func (Plugin) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Kind: framework.KindNode, Action: framework.Add | framework.UpdateNodeLabel}}
}
