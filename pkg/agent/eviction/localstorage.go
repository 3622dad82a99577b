package eviction

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The kubelet's messages for pods past their local storage limits.
const (
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
)

// localStorageExceeded is why the pod must go for the storage it uses, as the kubelet
// checks it: an emptyDir past its sizeLimit, the pod past the sum of its containers'
// ephemeral-storage limits, or a container (its writable layer and logs) past its own;
// "" when none is.
func localStorageExceeded(pod *corev1.Pod, ps *statsapi.PodStats) string {
	if ps == nil {
		return ""
	}
	volumeUsed := map[string]uint64{}
	for _, v := range ps.VolumeStats {
		if v.UsedBytes != nil {
			volumeUsed[v.Name] = *v.UsedBytes
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Sign() <= 0 {
			continue
		}
		if used, ok := volumeUsed[v.Name]; ok && int64(used) > v.EmptyDir.SizeLimit.Value() {
			return fmt.Sprintf(emptyDirMessageFmt, v.Name, v.EmptyDir.SizeLimit.String())
		}
	}
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	if limit, ok := limits[corev1.ResourceEphemeralStorage]; ok && limit.Sign() > 0 {
		if e := ps.EphemeralStorage; e != nil && e.UsedBytes != nil && int64(*e.UsedBytes) > limit.Value() {
			return fmt.Sprintf(podEphemeralStorageMessageFmt, limit.String())
		}
	}
	for _, cs := range ps.Containers {
		for _, spec := range pod.Spec.Containers {
			limit, ok := spec.Resources.Limits[corev1.ResourceEphemeralStorage]
			if spec.Name != cs.Name || !ok || limit.Sign() <= 0 {
				continue
			}
			if used := containerDiskUsed(cs); used != nil && int64(*used) > limit.Value() {
				return fmt.Sprintf(containerEphemeralStorageMessageFmt, spec.Name, limit.String())
			}
		}
	}
	return ""
}

// containerDiskUsed is a container's writable layer and logs, as the kubelet counts its
// ephemeral storage; nil when the sample lacks either.
func containerDiskUsed(cs statsapi.ContainerStats) *uint64 {
	if cs.Rootfs == nil || cs.Rootfs.UsedBytes == nil || cs.Logs == nil || cs.Logs.UsedBytes == nil {
		return nil
	}
	used := *cs.Rootfs.UsedBytes + *cs.Logs.UsedBytes
	return &used
}
