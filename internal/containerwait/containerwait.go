// Package containerwait tells why a container has not started yet, in the kubelet's words
// (validateContainerLogStatus): the API server answers a log request with it, and the node
// API too for a request that reaches the node.
package containerwait

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Message is the refusal of logs for the container name of pod while it waits to start
// ("" once it has run or runs); listed tells whether the pod's status lists it at all.
func Message(pod *corev1.Pod, name string) (listed bool, message string) {
	statuses := slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses)
	i := slices.IndexFunc(statuses, func(cs corev1.ContainerStatus) bool { return cs.Name == name })
	if i < 0 {
		return false, ""
	}
	cs := statuses[i]
	if cs.State.Waiting == nil || cs.LastTerminationState.Terminated != nil {
		return true, ""
	}
	reason := cs.State.Waiting.Reason
	switch reason { // the kubelet's words for the commonest pending failures
	case "ErrImagePull":
		reason = "image can't be pulled"
	case "ImagePullBackOff":
		reason = "trying and failing to pull image"
	}
	return true, fmt.Sprintf("container %q in pod %q is waiting to start: %s", name, pod.Name, reason)
}
