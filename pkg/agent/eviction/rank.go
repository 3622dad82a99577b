package eviction

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minik8s/minik8s/pkg/agent/staticpod"
	"github.com/minik8s/minik8s/pkg/stats"
)

// systemCriticalPriority is scheduling.k8s.io's SystemCriticalPriority: pods at or above
// it are never evicted, as static and mirror pods are not.
const systemCriticalPriority = 2000000000

// critical pods are the ones the kubelet never evicts: static pods, mirror pods and
// system-critical priorities.
func critical(pod *corev1.Pod) bool {
	return staticpod.IsStatic(pod) || staticpod.IsMirror(pod) || pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}

// usage is what a pod uses of what a crossing measures, and whether the sample has it.
func usage(ps *statsapi.PodStats, c stats.Crossing) (int64, bool) {
	if ps == nil {
		return 0, false
	}
	switch c.Condition {
	case stats.MemoryPressure:
		if ps.Memory != nil && ps.Memory.WorkingSetBytes != nil {
			return int64(*ps.Memory.WorkingSetBytes), true
		}
	case stats.DiskPressure:
		if e := ps.EphemeralStorage; e != nil {
			if starvedResource(c.Signal) == "inodes" {
				if e.InodesUsed != nil {
					return int64(*e.InodesUsed), true
				}
			} else if e.UsedBytes != nil {
				return int64(*e.UsedBytes), true
			}
		}
	case stats.PIDPressure:
		if ps.ProcessStats != nil && ps.ProcessStats.ProcessCount != nil {
			return int64(*ps.ProcessStats.ProcessCount), true
		}
	}
	return 0, false
}

// rank orders pods for eviction under a crossing, as the kubelet does: for memory and
// disk, pods using more than they request first, then lower priority first, then the
// most over their request; for pids, lower priority first, then the most processes.
// Pods the sample lacks go first, as they do in the kubelet.
func rank(pods []*corev1.Pod, podStats map[types.UID]*statsapi.PodStats, c stats.Crossing) []*corev1.Pod {
	var resourceName corev1.ResourceName
	switch c.Condition {
	case stats.MemoryPressure:
		resourceName = corev1.ResourceMemory
	case stats.DiskPressure:
		resourceName = corev1.ResourceEphemeralStorage
	}
	type ranked struct {
		pod      *corev1.Pod
		found    bool
		over     int64 // usage less requests
		priority int32
	}
	list := make([]ranked, 0, len(pods))
	for _, pod := range pods {
		used, found := usage(podStats[pod.UID], c)
		r := ranked{pod: pod, found: found, over: used}
		if resourceName != "" {
			requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
			r.over -= requests.Name(resourceName, "").Value()
		}
		if pod.Spec.Priority != nil {
			r.priority = *pod.Spec.Priority
		}
		list = append(list, r)
	}
	slices.SortStableFunc(list, func(a, b ranked) int {
		if a.found != b.found {
			return cmpBool(!a.found, !b.found)
		}
		if resourceName != "" {
			if d := cmpBool(a.over > 0, b.over > 0); d != 0 {
				return d
			}
		}
		if d := cmp.Compare(a.priority, b.priority); d != 0 {
			return d
		}
		return cmp.Compare(b.over, a.over)
	})
	out := make([]*corev1.Pod, len(list))
	for i, r := range list {
		out[i] = r.pod
	}
	return out
}

// cmpBool puts true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func statsByUID(s *statsapi.Summary) map[types.UID]*statsapi.PodStats {
	out := make(map[types.UID]*statsapi.PodStats, len(s.Pods))
	for i := range s.Pods {
		out[types.UID(s.Pods[i].PodRef.UID)] = &s.Pods[i]
	}
	return out
}
