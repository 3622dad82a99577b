package core

import (
	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// events.k8s.io/v1 Events are the core/v1 Events under other field names, as in
// kube-apiserver (one storage, converted both ways): an event written through either API
// is read, listed and watched through both (`kubectl get events` shows those of a
// recorder on events.k8s.io).
func EventsV1Conversion(storage *registry.Resource) *registry.Conversion {
	return &registry.Conversion{Storage: storage, ToStorage: eventToCore, FromStorage: eventFromCore}
}

func eventToCore(obj runtime.Object) (runtime.Object, error) {
	return coreEvent(obj.(*eventsv1.Event)), nil
}

// coreEvent is an events.k8s.io/v1 Event as the core/v1 Event it is stored as.
func coreEvent(e *eventsv1.Event) *corev1.Event {
	in := e.DeepCopy()
	out := &corev1.Event{ObjectMeta: in.ObjectMeta, InvolvedObject: in.Regarding, Related: in.Related, Reason: in.Reason,
		Message: in.Note, Source: in.DeprecatedSource, FirstTimestamp: in.DeprecatedFirstTimestamp,
		LastTimestamp: in.DeprecatedLastTimestamp, Count: in.DeprecatedCount, Type: in.Type, EventTime: in.EventTime,
		Action: in.Action, ReportingController: in.ReportingController, ReportingInstance: in.ReportingInstance}
	out.APIVersion, out.Kind = "v1", "Event"
	if s := in.Series; s != nil {
		out.Series = &corev1.EventSeries{Count: s.Count, LastObservedTime: s.LastObservedTime}
	}
	return out
}

func eventFromCore(obj runtime.Object) (runtime.Object, error) {
	in := obj.(*corev1.Event).DeepCopy()
	out := &eventsv1.Event{ObjectMeta: in.ObjectMeta, Regarding: in.InvolvedObject, Related: in.Related, Reason: in.Reason,
		Note: in.Message, DeprecatedSource: in.Source, DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp: in.LastTimestamp, DeprecatedCount: in.Count, Type: in.Type, EventTime: in.EventTime,
		Action: in.Action, ReportingController: in.ReportingController, ReportingInstance: in.ReportingInstance}
	out.APIVersion, out.Kind = eventsv1.SchemeGroupVersion.String(), "Event"
	if s := in.Series; s != nil {
		out.Series = &eventsv1.EventSeries{Count: s.Count, LastObservedTime: s.LastObservedTime}
	}
	return out, nil
}
