// Package qos computes a pod's quality-of-service class from its containers' requests
// and limits, by Kubernetes' rules (seed 003): Guaranteed when every container limits CPU
// and memory and requests exactly that, BestEffort when no container asks for either,
// Burstable otherwise; a pod with pod-level resources (spec.resources) is classed by them
// alone, the same way (kube's PodLevelResources, on by default). miniapi stores it in status.qosClass at create, as kube-apiserver
// does; minilet places and ranks the pod's cgroups and OOM scores by it.
package qos

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Class is the pod's QoS class.
func Class(pod *corev1.Pod) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	if r := pod.Spec.Resources; r != nil {
		// Pod-level resources decide alone, as kube's ComputePodQOS (PodLevelResources, on by
		// default): an empty spec.resources makes the pod BestEffort.
		addCounted(requests, r.Requests)
		if len(r.Limits) > 0 && addCounted(limits, r.Limits) < 2 {
			guaranteed = false
		}
	} else {
		for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
			addCounted(requests, c.Resources.Requests)
			if addCounted(limits, c.Resources.Limits) < 2 {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// addCounted adds to sum the positive cpu and memory quantities of list and says how many
// of the two it found.
func addCounted(sum, list corev1.ResourceList) int {
	found := 0
	for name, q := range list {
		if (name == corev1.ResourceCPU || name == corev1.ResourceMemory) && q.Sign() > 0 {
			found++
			total := sum[name]
			total.Add(q)
			sum[name] = total
		}
	}
	return found
}
