// Package nodestatus is the kubelet's node status side in minilet: the Node registered,
// its status posted (addresses, capacity, allocatable less --system-reserved and
// --kube-reserved, nodeInfo, Ready and pressure conditions) and its Lease renewed.
package nodestatus

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// reservable are the resources --system-reserved and --kube-reserved may hold back.
var reservable = map[corev1.ResourceName]bool{
	corev1.ResourceCPU: true, corev1.ResourceMemory: true, corev1.ResourceEphemeralStorage: true,
}

// ParseReserved reads a --system-reserved or --kube-reserved value
// (cpu=500m,memory=1Gi,ephemeral-storage=1Gi), naming the flag in its errors.
func ParseReserved(flag string, m map[string]string) (corev1.ResourceList, error) {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	list := corev1.ResourceList{}
	for _, name := range names {
		if !reservable[corev1.ResourceName(name)] {
			return nil, fmt.Errorf("--%s: cannot reserve %q (only cpu, memory and ephemeral-storage)", flag, name)
		}
		q, err := resource.ParseQuantity(m[name])
		if err != nil || q.Sign() < 0 {
			return nil, fmt.Errorf("--%s: %s=%q is not a quantity of zero or more", flag, name, m[name])
		}
		list[corev1.ResourceName(name)] = q
	}
	return list, nil
}

// Allocatable is what pods may use: capacity less what is reserved for the system and
// for minilet and containerd, never below zero (the kubelet's node allocatable).
func Allocatable(capacity corev1.ResourceList, reserved ...corev1.ResourceList) corev1.ResourceList {
	out := capacity.DeepCopy()
	for name, q := range out {
		for _, r := range reserved {
			if v, ok := r[name]; ok {
				q.Sub(v)
			}
		}
		if q.Sign() < 0 {
			q = *resource.NewQuantity(0, q.Format)
		}
		out[name] = q
	}
	return out
}
