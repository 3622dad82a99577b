package agent

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"

	"github.com/minik8s/minik8s/internal/eventsink"
)

// eventComponent is the source component of minilet's events; tools filter
// node-agent events by the kubelet's name.
const eventComponent = "kubelet"

// NewEventRecorder records events through the API; stop ends it, cutting short a write
// in flight so that none outlives minilet's shutdown.
func NewEventRecorder(client kubernetes.Interface, nodeName string) (rec record.EventRecorder, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartStructuredLogging(4)
	b.StartRecordingToSink(eventsink.New(ctx, client.CoreV1()))
	stop = func() {
		b.Shutdown()
		cancel()
	}
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: eventComponent, Host: nodeName}), stop
}

// nodeEvent records an event about this node, referring to it as the kubelet does (by
// name, with the name as UID).
func (a *Agent) nodeEvent(eventType, reason, format string, args ...any) {
	ref := &corev1.ObjectReference{Kind: "Node", Name: a.cfg.NodeName, UID: types.UID(a.cfg.NodeName)}
	a.recorder.Eventf(ref, eventType, reason, format, args...)
}
