package core

import (
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEventValidation: events are checked as kube-apiserver checks them: a core/v1 event
// with an eventTime needs its reporting fields (the controller under its core/v1 name,
// reportingComponent); one created through events.k8s.io/v1 also may not carry the
// deprecated fields, with the paths of the stored core form.
func TestEventValidation(t *testing.T) {
	now := metav1.NewMicroTime(time.Unix(1_700_000_000, 0))
	old := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "other"}}
	registrytest.ExpectMessages(t, "core without eventTime", EventRules.Validate(old), `involvedObject.namespace: Invalid value: "other": does not match event.namespace`)
	core := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, EventTime: now,
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns"}, Reason: strings.Repeat("r", 129)}
	registrytest.ExpectMessages(t, "core with eventTime", EventRules.Validate(core),
		`reportingComponent: Required value`,
		`reportingComponent: Invalid value: "": name part must be non-empty`,
		`reportingComponent: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		`reportingInstance: Required value`,
		`action: Required value`,
		`reason: Invalid value: "": can have at most 128 characters`)
	ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, EventTime: now, Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "ns"},
		ReportingController: "example.com/c", ReportingInstance: "c-1", Action: "Act", Reason: "Why", Type: "Info",
		Series: &eventsv1.EventSeries{Count: 1}, DeprecatedCount: 3}
	want := []string{`series.count: Invalid value: "": should be at least 2`, `series.lastObservedTime: Required value`,
		`type: Invalid value: "": has invalid value: Info`, `count: Invalid value: "": needs to be unset`}
	registrytest.ExpectMessages(t, "events.k8s.io create", EventsV1Rules.Validate(ev), want...)
	if errs := EventsV1Rules.ValidateUpdate(ev, ev); len(errs) != 0 {
		t.Errorf("events.k8s.io update: %v", errs.ToAggregate())
	}
}

// TestEventUpdateValidation: an update through events.k8s.io/v1 may change only the series
// (checked again when changed) and metadata, as kube's ValidateEventUpdate, with the core
// paths; eventTime may move below a microsecond.
func TestEventUpdateValidation(t *testing.T) {
	now := metav1.NewMicroTime(time.Unix(1_700_000_000, 0))
	old := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, EventTime: now, Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"},
		ReportingController: "example.com/c", ReportingInstance: "c-1", Action: "Act", Reason: "Why", Note: "n", Type: corev1.EventTypeNormal}
	series := old.DeepCopy()
	series.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: now}
	series.EventTime = metav1.NewMicroTime(now.Add(500 * time.Nanosecond))
	registrytest.ExpectMessages(t, "series and sub-microsecond eventTime", EventsV1Rules.ValidateUpdate(series, old))
	bad := series.DeepCopy()
	bad.Series.Count = 1
	bad.Regarding.Name, bad.Reason, bad.Note, bad.Type = "q", "Other", "m", corev1.EventTypeWarning
	bad.EventTime = metav1.NewMicroTime(now.Add(time.Second))
	bad.Action, bad.ReportingController, bad.ReportingInstance = "Act2", "example.com/d", "d-1"
	bad.Related = &corev1.ObjectReference{Kind: "Node", Name: "n"}
	registrytest.ExpectMessages(t, "immutable fields", EventsV1Rules.ValidateUpdate(bad, series),
		`series.count: Invalid value: "": should be at least 2`,
		`involvedObject: Invalid value: {"Kind":"Pod","Namespace":"ns","Name":"q","UID":"","APIVersion":"","ResourceVersion":"","FieldPath":""}: field is immutable`,
		`reason: Invalid value: "Other": field is immutable`,
		`message: Invalid value: "m": field is immutable`,
		`type: Invalid value: "Warning": field is immutable`,
		`eventTime: Invalid value: "2023-11-14T22:13:21.000000Z": field is immutable`,
		`action: Invalid value: "Act2": field is immutable`,
		`related: Invalid value: {"Kind":"Node","Namespace":"","Name":"n","UID":"","APIVersion":"","ResourceVersion":"","FieldPath":""}: field is immutable`,
		`reportingController: Invalid value: "example.com/d": field is immutable`,
		`reportingInstance: Invalid value: "d-1": field is immutable`)
	deprecated := series.DeepCopy()
	deprecated.DeprecatedCount, deprecated.DeprecatedSource = 3, corev1.EventSource{Component: "kubelet"}
	deprecated.DeprecatedFirstTimestamp = metav1.NewTime(now.Time)
	deprecated.DeprecatedLastTimestamp = metav1.NewTime(now.Time)
	registrytest.ExpectMessages(t, "deprecated fields", EventsV1Rules.ValidateUpdate(deprecated, series),
		`source: Invalid value: {"Component":"kubelet","Host":""}: field is immutable`,
		`firstTimestamp: Invalid value: "2023-11-14T22:13:20Z": field is immutable`,
		`lastTimestamp: Invalid value: "2023-11-14T22:13:20Z": field is immutable`,
		`count: Invalid value: 3: field is immutable`)
}
