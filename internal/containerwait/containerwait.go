// Package containerwait is the kubelet's validateContainerLogStatus: why a container has
// not started yet, in the kubelet's words (the API server answers a log request with it,
// and the node API too for a request that reaches the node), and which run's log a request
// reads.
package containerwait

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Message is the refusal of logs for the container name of pod while it waits to start
// ("" once it has run or runs); listed tells whether the pod's status lists it at all.
func Message(pod *corev1.Pod, name string) (listed bool, message string) {
	cs, listed := status(pod, name)
	if !listed {
		return false, ""
	}
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

// LoggedID is the ID of the run of container name whose log a request reads, as the pod's
// status names it: the last terminated one for previous, else the running or terminated
// one, else the last terminated; "" for none.
func LoggedID(pod *corev1.Pod, name string, previous bool) string {
	cs, _ := status(pod, name)
	var last string
	if t := cs.LastTerminationState.Terminated; t != nil {
		last = t.ContainerID
	}
	switch {
	case previous:
		return last
	case cs.State.Running != nil:
		return cs.ContainerID
	case cs.State.Terminated != nil && cs.State.Terminated.ContainerID != "":
		return cs.State.Terminated.ContainerID
	}
	return last
}

// status is the status of the container, init container or ephemeral container name.
func status(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	statuses := slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses)
	i := slices.IndexFunc(statuses, func(cs corev1.ContainerStatus) bool { return cs.Name == name })
	if i < 0 {
		return corev1.ContainerStatus{}, false
	}
	return statuses[i], true
}
