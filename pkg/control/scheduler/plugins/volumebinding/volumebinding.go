// Package volumebinding is the basics of kube-scheduler's VolumeBinding plugin: a pod whose
// PersistentVolumeClaim is missing, being deleted or not yet bound waits (the scheduler
// neither binds claims nor provisions volumes: the PV controller binds them, and the pod is
// retried when a claim or volume changes); a pod whose bound volume has node affinity fits
// only the nodes it allows.
package volumebinding

import (
	"context"
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Name is the plugin's name in profiles.
const Name = "VolumeBinding"

// kube-scheduler's wording.
const (
	ErrReasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"
	ErrReasonNodeConflict     = "node(s) had volume node affinity conflict"
)

const stateKey = Name + "/preFilter"

// Plugin is the filter.
type Plugin struct {
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
}

// New makes the plugin.
func New(h framework.Handle) (framework.Plugin, error) {
	f := h.Informers().Core().V1()
	return &Plugin{claims: f.PersistentVolumeClaims().Lister(), volumes: f.PersistentVolumes().Lister()}, nil
}

func (*Plugin) Name() string { return Name }

// PreFilter checks every claim is bound and collects the node affinity of their volumes;
// Skip when the pod has no claims.
func (p *Plugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ framework.NodeLister) *framework.Status {
	var selectors []*nodeaffinity.NodeSelector
	hasClaims := false
	for _, v := range pod.Pod.Spec.Volumes {
		name := ""
		switch {
		case v.PersistentVolumeClaim != nil:
			name = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			name = pod.Pod.Name + "-" + v.Name
		default:
			continue
		}
		hasClaims = true
		pvc, err := p.claims.PersistentVolumeClaims(pod.Pod.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", name))
		}
		if err != nil {
			return framework.AsStatus(err)
		}
		if pvc.DeletionTimestamp != nil {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
		}
		if pvc.Spec.VolumeName == "" {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnboundImmediate)
		}
		pv, err := p.volumes.Get(pvc.Spec.VolumeName)
		if err != nil {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolume %q not found", pvc.Spec.VolumeName))
		}
		if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
			sel, err := nodeaffinity.NewNodeSelector(pv.Spec.NodeAffinity.Required)
			if err != nil {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolume %q node affinity: %v", pv.Name, err))
			}
			selectors = append(selectors, sel)
		}
	}
	if !hasClaims || len(selectors) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, selectors)
	return nil
}

func (p *Plugin) Filter(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	v, _ := state.Read(stateKey)
	selectors, _ := v.([]*nodeaffinity.NodeSelector)
	for _, s := range selectors {
		if !s.Match(n.Node()) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeConflict)
		}
	}
	return nil
}

func (*Plugin) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Kind: framework.KindPersistentVolumeClaim, Action: framework.Add | framework.Update},
		{Kind: framework.KindPersistentVolume, Action: framework.Add | framework.Update},
		{Kind: framework.KindNode, Action: framework.Add | framework.UpdateNodeLabel},
	}
}
