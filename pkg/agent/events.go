package agent

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
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

// nodeEvent records an event about this node, referring to it as the kubelet does (by
// name, with the name as UID).
func (a *Agent) nodeEvent(eventType, reason, format string, args ...any) {
	ref := &corev1.ObjectReference{Kind: "Node", Name: a.cfg.NodeName, UID: types.UID(a.cfg.NodeName)}
	a.recorder.Eventf(ref, eventType, reason, format, args...)
}
