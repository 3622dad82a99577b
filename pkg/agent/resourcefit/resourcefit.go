// Package resourcefit admits a pod to the node only if the node's allocatable resources
// hold it beside the pods admitted before, as the kubelet's predicate admission runs the
// scheduler's NodeResourcesFit again on the node: a pod bound by nodeName skips the
// scheduler, and a pod the scheduler placed on an older view of the node may no longer fit.
package resourcefit

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
)

// Admission refuses a pod that asks for more than the node has left of a resource.
type Admission struct {
	Allocatable func() corev1.ResourceList // the node's, as its status reports it
	Others      func() []*corev1.Pod       // the node's admitted pods that may still run
}

// Admit answers as the kubelet: reason OutOfcpu, OutOfmemory, OutOfephemeral-storage,
// OutOfpods or OutOf<extended resource>, for the first resource short, in the
// scheduler's order (pods, cpu, memory, ephemeral storage, the rest).
func (a Admission) Admit(pod *corev1.Pod) (ok bool, reason, msg string) {
	node := framework.NewNodeInfo()
	node.SetNode(&corev1.Node{Status: corev1.NodeStatus{Allocatable: a.Allocatable()}})
	for _, other := range a.Others() {
		if other.UID != pod.UID {
			node.AddPod(framework.NewPodInfo(other))
		}
	}
	want := framework.NewPodInfo(pod).Requests
	short := func(name corev1.ResourceName, requested int64) bool {
		return requested > 0 && requested > node.Allocatable.Get(name)-node.Requested.Get(name)
	}
	// An extended resource the node does not know is not checked: the kubelet leaves it
	// to cluster-level resources and DRA (removeMissingExtendedResources). Any other, huge
	// pages of a size the node lacks among them, is, against a capacity of 0.
	var extended []corev1.ResourceName
	for name := range want.Scalar {
		if _, known := node.Allocatable.Scalar[name]; known || !isExtendedResource(name) {
			extended = append(extended, name)
		}
	}
	slices.Sort(extended)
	names := append([]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}, extended...)
	if int64(len(node.Pods))+1 > node.Allocatable.AllowedPodNumber {
		return false, "OutOfpods", message(corev1.ResourcePods, 1, int64(len(node.Pods)), node.Allocatable.AllowedPodNumber)
	}
	for _, name := range names {
		if short(name, want.Get(name)) {
			return false, "OutOf" + string(name), message(name, want.Get(name), node.Requested.Get(name), node.Allocatable.Get(name))
		}
	}
	return true, "", ""
}

// isExtendedResource is the kubelet's v1helper.IsExtendedResourceName: a name outside the
// kubernetes.io/ namespace with a domain (example.com/gpu), not a native resource such
// as cpu or hugepages-2Mi, and one a quota could name as "requests.<name>".
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
}

// message is the kubelet's InsufficientResourceError text: CPU in millicores, the rest in
// their units.
func message(name corev1.ResourceName, requested, used, capacity int64) string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity)
}
