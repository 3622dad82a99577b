package podsync

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/agent/lifecycle"
)

// Event reasons, as the kubelet spells them (pkg/kubelet/events).
const (
	eventFailed          = "Failed"
	eventCreated         = "Created"
	eventStarted         = "Started"
	eventKilling         = "Killing"
	eventBackOff         = "BackOff"
	eventFailedSandbox   = "FailedCreatePodSandBox"
	eventSandboxChanged  = "SandboxChanged"
	eventNetworkNotReady = "NetworkNotReady"
)

// containerRef points an event at one container of a pod, like the kubelet's
// GenerateContainerRef: its fieldPath names the spec list that holds it.
func containerRef(pod *corev1.Pod, name string) *corev1.ObjectReference {
	list := "containers"
	switch {
	case slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name }):
	case slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == name }):
		list = "initContainers"
	case slices.ContainsFunc(pod.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == name }):
		list = "ephemeralContainers"
	}
	ref := podObjectRef(pod)
	ref.FieldPath = fmt.Sprintf("spec.%s{%s}", list, name)
	return ref
}

// podObjectRef points an event at a pod, as the kubelet's ref.GetReference of it.
func podObjectRef(pod *corev1.Pod) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		Kind:            "Pod",
		APIVersion:      "v1",
		Namespace:       pod.Namespace,
		Name:            pod.Name,
		UID:             pod.UID,
		ResourceVersion: pod.ResourceVersion,
	}
}

// ContainerEvent records an event about a container of a pod (the prober's events too).
func (s *Syncer) ContainerEvent(pod *corev1.Pod, container, eventType, reason, format string, args ...any) {
	s.recorder.Eventf(containerRef(pod, container), eventType, reason, format, args...)
}

// podEvent records an event about a pod.
func (s *Syncer) podEvent(pod *corev1.Pod, eventType, reason, format string, args ...any) {
	s.recorder.Eventf(pod, eventType, reason, format, args...)
}

// hookEvents records a lifecycle hook's events about pod, as the kubelet's handler runner
// does on the pod itself (LifecycleHTTPFallback).
func (s *Syncer) hookEvents(pod *corev1.Pod) lifecycle.Eventf {
	return func(eventType, reason, format string, args ...any) {
		s.podEvent(pod, eventType, reason, format, args...)
	}
}

// PodKey names a pod in messages and logs: namespace/name.
func PodKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
