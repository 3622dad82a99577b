// Package tainttoleration is kube-scheduler's TaintToleration plugin: a node with a
// NoSchedule or NoExecute taint the pod does not tolerate is filtered out; nodes with fewer
// untolerated PreferNoSchedule taints score higher.
package tainttoleration

import (
	"context"
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// Name is the plugin's name in profiles.
const Name = "TaintToleration"

const stateKey = Name + "/preScore"

// Plugin is the filter and score.
type Plugin struct{}

// New makes the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

func (Plugin) Name() string { return Name }

func (Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	taints := n.Taints
	if len(taints) == 0 {
		return nil
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, pod.Pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	if !untolerated {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
}

// PreScore keeps the tolerations that can tolerate PreferNoSchedule taints.
func (Plugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	var tols []corev1.Toleration
	for _, t := range pod.Pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == corev1.TaintEffectPreferNoSchedule {
			tols = append(tols, t)
		}
	}
	state.Write(stateKey, tols)
	return nil
}

// Score counts the node's PreferNoSchedule taints the pod does not tolerate.
func (Plugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) (int64, *framework.Status) {
	if len(n.Taints) == 0 {
		return 0, nil // most nodes: no read of the cycle's state
	}
	tols, _ := framework.ReadAs[[]corev1.Toleration](state, stateKey)
	var count int64
	for i := range n.Taints {
		t := &n.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule && !corev1helpers.TolerationsTolerateTaint(klog.Background(), tols, t, false) {
			count++
		}
	}
	return count, nil
}

// NormalizeScore turns counts around: fewest untolerated taints scores 100.
func (Plugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	framework.DefaultNormalizeScore(true, scores)
	return nil
}

func (Plugin) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Kind: framework.KindNode, Action: framework.Add | framework.UpdateNodeTaint}}
}
