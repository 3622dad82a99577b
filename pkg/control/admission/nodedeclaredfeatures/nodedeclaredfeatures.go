// Package nodedeclaredfeatures is Kubernetes' NodeDeclaredFeatureValidator admission plugin
// (on by default in 1.36, with the NodeDeclaredFeatures gate): an update or resize of a
// bound pod that changes its spec is refused when the change needs a feature its node does
// not declare in status.declaredFeatures.
package nodedeclaredfeatures

import (
	"context"
	"fmt"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/declaredfeatures"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	"k8s.io/component-helpers/nodedeclaredfeatures/types"
)

// Plugin reads the nodes from the admission informers.
type Plugin struct {
	nodes  corelisters.NodeLister
	synced cache.InformerSynced
	inf    *admission.Informers
}

// New is the plugin, registering the node informer in inf.
func New(inf *admission.Informers) *Plugin {
	nodes := inf.Factory.Core().V1().Nodes()
	return &Plugin{nodes: nodes.Lister(), synced: nodes.Informer().HasSynced, inf: inf}
}

// Validate refuses an update (or resize) of a bound pod whose spec change needs features
// its node does not declare.
func (p *Plugin) Validate(ctx context.Context, a *generic.Attributes) error {
	if a.Operation != generic.Update || a.Resource.Group != "" || a.Resource.Resource != "pods" {
		return nil
	}
	if a.Subresource != "" && a.Subresource != "resize" {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	old, oldOK := a.OldObject.(*corev1.Pod)
	// The generation moves only when the spec does: nothing else needs a feature.
	if !ok || !oldOK || pod.Spec.NodeName == "" || pod.Generation == old.Generation {
		return nil
	}
	if ready, err := p.inf.Wait(ctx, a, p.synced); !ready {
		return err
	}
	reqs, err := declaredfeatures.Framework.InferForPodUpdate(podInfo(old), podInfo(pod), declaredfeatures.Version)
	if err != nil {
		return admission.Forbidden(a, fmt.Errorf("failed to infer pod capability requirements: %w", err))
	}
	if reqs.IsEmpty() {
		return nil
	}
	return p.matchNode(a, reqs, pod.Spec.NodeName)
}

// matchNode refuses the write unless the node declares every required feature.
func (p *Plugin) matchNode(a *generic.Attributes, reqs ndf.FeatureSet, nodeName string) error {
	node, err := p.nodes.Get(nodeName)
	if apierrors.IsNotFound(err) {
		return admission.Forbidden(a, fmt.Errorf("node %q not found", nodeName))
	}
	if err != nil {
		return admission.Forbidden(a, fmt.Errorf("failed to get node %q: %w", nodeName, err))
	}
	result, err := declaredfeatures.Framework.MatchNode(reqs, node)
	if err != nil {
		return admission.Forbidden(a, fmt.Errorf("failed to match pod requirements against node %q: %w", nodeName, err))
	}
	if !result.IsMatch {
		return admission.Forbidden(a, fmt.Errorf("pod update requires features %s which are not available on node %q", strings.Join(result.UnsatisfiedRequirements, ", "), nodeName))
	}
	return nil
}

func podInfo(pod *corev1.Pod) *types.PodInfo {
	return &types.PodInfo{Spec: &pod.Spec, Status: &pod.Status}
}
