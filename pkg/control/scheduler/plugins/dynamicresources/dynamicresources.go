// Package dynamicresources stands in for kube-scheduler's DynamicResources plugin: minik8s
// serves the resource.k8s.io API but runs no DRA driver and allocates no device, so a pod
// naming a ResourceClaim fits no node, and waits, rather than being placed as if it needed
// nothing.
package dynamicresources

import (
	"context"
	"fmt"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
)

// Name is the plugin's name in profiles.
const Name = "DynamicResources"

// ErrReason is kube-scheduler's wording when the claims fit no node.
const ErrReason = "cannot allocate all claims"

// Plugin is the PreFilter.
type Plugin struct{}

// New makes the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

func (Plugin) Name() string { return Name }

// PreFilter refuses a pod with resource claims, naming them; Skip for any other pod.
func (Plugin) PreFilter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, _ framework.NodeLister) *framework.Status {
	claims := pod.Pod.Spec.ResourceClaims
	if len(claims) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	names := make([]string, 0, len(claims))
	for _, c := range claims {
		names = append(names, fmt.Sprintf("%q", claimName(pod.Pod, c)))
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable,
		fmt.Sprintf("%s: resourceclaim %s: no DRA driver publishes devices in this cluster", ErrReason, strings.Join(names, ", ")))
}

// claimName is the ResourceClaim a pod's claim stands for: the one it names, the one made
// from its template (status.resourceClaimStatuses), or else the template's name.
func claimName(pod *corev1.Pod, c corev1.PodResourceClaim) string {
	if c.ResourceClaimName != nil {
		return *c.ResourceClaimName
	}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == c.Name && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	if c.ResourceClaimTemplateName != nil {
		return "from template " + *c.ResourceClaimTemplateName
	}
	return c.Name
}

// EventsToRegister: nothing the scheduler watches makes a claim allocatable; the pod is
// tried again when it changes or at the periodic flush of unschedulable pods.
func (Plugin) EventsToRegister() []framework.ClusterEvent { return []framework.ClusterEvent{} }
