// Package qos computes a pod's quality-of-service class from its containers' requests
// and limits, by Kubernetes' rules (seed 003): Guaranteed when every container limits CPU
// and memory and requests exactly that, BestEffort when no container asks for either,
// Burstable otherwise. miniapi stores it in status.qosClass at create, as kube-apiserver
// does; minilet places and ranks the pod's cgroups and OOM scores by it.
package qos

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Class is the pod's QoS class.
func Class(pod *corev1.Pod) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for name, q := range c.Resources.Requests {
				if counted(name) && q.Sign() > 0 {
					add(requests, name, q)
				}
			}
			found := 0
			for name, q := range c.Resources.Limits {
				if counted(name) && q.Sign() > 0 {
					found++
					add(limits, name, q)
				}
			}
			if found < 2 {
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

func counted(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

func add(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	sum := list[name]
	sum.Add(q)
	list[name] = sum
}
