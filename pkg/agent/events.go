package agent

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// Event reasons, as the kubelet spells them (pkg/kubelet/events).
const (
	eventPulling           = "Pulling"
	eventPulled            = "Pulled"
	eventFailed            = "Failed"
	eventCreated           = "Created"
	eventStarted           = "Started"
	eventKilling           = "Killing"
	eventBackOff           = "BackOff"
	eventErrImageNeverPull = "ErrImageNeverPull"
	eventFailedSandbox     = "FailedCreatePodSandBox"
	eventSandboxChanged    = "SandboxChanged"
)

// eventComponent is the source component of minilet's events; tools filter
// node-agent events by the kubelet's name.
const eventComponent = "kubelet"

// NewEventRecorder records events through the API; stop flushes and ends it.
func NewEventRecorder(client kubernetes.Interface, nodeName string) (rec record.EventRecorder, stop func()) {
	b := record.NewBroadcaster()
	b.StartStructuredLogging(4)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: eventComponent, Host: nodeName}), b.Shutdown
}

// containerRef points an event at one container of a pod, like the kubelet's.
func containerRef(pod *corev1.Pod, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		Kind:            "Pod",
		APIVersion:      "v1",
		Namespace:       pod.Namespace,
		Name:            pod.Name,
		UID:             pod.UID,
		ResourceVersion: pod.ResourceVersion,
		FieldPath:       fmt.Sprintf("spec.containers{%s}", name),
	}
}

// containerEvent records an event about a container of a pod.
func (a *Agent) containerEvent(pod *corev1.Pod, container, eventType, reason, format string, args ...any) {
	a.recorder.Eventf(containerRef(pod, container), eventType, reason, format, args...)
}

// podEvent records an event about a pod.
func (a *Agent) podEvent(pod *corev1.Pod, eventType, reason, format string, args ...any) {
	a.recorder.Eventf(pod, eventType, reason, format, args...)
}

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// nodeEvent records an event about this node, referring to it as the kubelet does (by
// name, with the name as UID).
func (a *Agent) nodeEvent(eventType, reason, format string, args ...any) {
	ref := &corev1.ObjectReference{Kind: "Node", Name: a.cfg.NodeName, UID: types.UID(a.cfg.NodeName)}
	a.recorder.Eventf(ref, eventType, reason, format, args...)
}
