// Package eventsink writes recorded core Events through the API with a context, so that
// stopping a component cuts short an Event write in flight: client-go's EventSinkImpl
// writes with context.Background, and such a write ran on past the shutdown.
package eventsink

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// New returns a sink for record.EventBroadcaster.StartRecordingToSink whose writes end
// with ctx.
func New(ctx context.Context, events typedcorev1.EventsGetter) record.EventSink {
	return sink{ctx: ctx, events: events.Events("")}
}

type sink struct {
	ctx    context.Context
	events typedcorev1.EventInterface
}

func (s sink) Create(event *corev1.Event) (*corev1.Event, error) {
	return s.events.CreateWithEventNamespaceWithContext(s.ctx, event)
}

func (s sink) Update(event *corev1.Event) (*corev1.Event, error) {
	return s.events.UpdateWithEventNamespaceWithContext(s.ctx, event)
}

func (s sink) Patch(event *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.events.PatchWithEventNamespaceWithContext(s.ctx, event, data)
}
