// Package nodestatus is the kubelet's node status side in minilet: the Node registered,
// its status posted (addresses, capacity, allocatable less --system-reserved,
// --kube-reserved and the hard eviction thresholds, nodeInfo, Ready and pressure
// conditions) and its Lease renewed.
package nodestatus

import (
	"fmt"
	"maps"
	"slices"

	"github.com/minik8s/minik8s/pkg/stats"
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
	names := slices.Sorted(maps.Keys(m))
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

// Allocatable is what pods may use: capacity less what is reserved for the system, for
// minilet and containerd and for eviction, never below zero (the kubelet's node allocatable).
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

// evictionReservable are the signals whose hard threshold the kubelet holds back from
// allocatable, and the resource each one is measured in.
var evictionReservable = map[string]corev1.ResourceName{
	"memory.available": corev1.ResourceMemory,
	"nodefs.available": corev1.ResourceEphemeralStorage,
}

// EvictionReserved is what the hard eviction thresholds hold back from allocatable, as
// the kubelet's hardEvictionReservation: pods scheduled up to allocatable leave the node
// above the threshold, so a full node is not under pressure at once.
func EvictionReserved(capacity corev1.ResourceList, thresholds []stats.Threshold) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, t := range thresholds {
		name, ok := evictionReservable[t.Signal]
		if !ok || !t.Hard() {
			continue
		}
		c := capacity[name]
		out[name] = *resource.NewQuantity(t.Of(c.Value()), resource.BinarySI)
	}
	return out
}
