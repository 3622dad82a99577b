package core

import (
	"fmt"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var EventRules = registry.Rules{
	NotCollected: true,
	Validate: func(obj runtime.Object) field.ErrorList {
		e := obj.(*corev1.Event)
		return append(registry.ValidateMeta(e, true, validation.NameIsDNSSubdomain), validateEvent(e, "reportingComponent")...)
	},
	Fields: func(obj runtime.Object) fields.Set {
		e := obj.(*corev1.Event)
		set := referenceFields("involvedObject", e.InvolvedObject)
		// source is the reporting controller where the event has no source component (one
		// written through events.k8s.io), as kube-apiserver's ToSelectableFields.
		source := e.Source.Component
		if source == "" {
			source = e.ReportingController
		}
		set["reason"], set["reportingComponent"], set["source"], set["type"] = e.Reason, e.ReportingController, source, e.Type
		return set
	},
	Table: eventTable(func(obj runtime.Object) eventRow { return coreEventRow(obj.(*corev1.Event)) }),
}

var EventsV1Rules = registry.Rules{
	NotCollected: true,
	// kube-apiserver checks the stored (core) form, so the paths are core/v1's (message, not
	// note); the stricter rules are for a create through events.k8s.io only.
	Validate: func(obj runtime.Object) field.ErrorList {
		e := coreEvent(obj.(*eventsv1.Event))
		errs := append(validateEvent(e, "reportingController"), registry.ValidateMeta(e, true, validation.NameIsDNSSubdomain)...)
		return append(errs, validateNewEvent(e)...)
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		e := coreEvent(obj.(*eventsv1.Event))
		return append(validateEvent(e, "reportingController"), validateEventUpdate(e, coreEvent(old.(*eventsv1.Event)))...)
	},
	Fields: func(obj runtime.Object) fields.Set {
		e := obj.(*eventsv1.Event)
		set := referenceFields("regarding", e.Regarding)
		set["reason"], set["reportingController"], set["type"] = e.Reason, e.ReportingController, e.Type
		return set
	},
	Table: eventTable(func(obj runtime.Object) eventRow {
		e := obj.(*eventsv1.Event)
		// The same columns as a core/v1 Event's: its fields under their core/v1 names.
		core := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: e.Name}, InvolvedObject: e.Regarding, Reason: e.Reason, Message: e.Note,
			Source: e.DeprecatedSource, FirstTimestamp: e.DeprecatedFirstTimestamp, LastTimestamp: e.DeprecatedLastTimestamp,
			Count: e.DeprecatedCount, Type: e.Type, EventTime: e.EventTime,
			ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance}
		if e.Series != nil {
			core.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
		}
		return coreEventRow(core)
	}),
}

// eventRow is what `kubectl get events` shows of an event of either version.
type eventRow struct {
	name         string
	first, last  time.Time
	count        int32
	typ, reason  string
	regarding    corev1.ObjectReference
	source, host string
	message      string
}

// referenceFields are the field selectors on an Event's object reference, under prefix.
func referenceFields(prefix string, ref corev1.ObjectReference) fields.Set {
	return fields.Set{
		prefix + ".kind":            ref.Kind,
		prefix + ".namespace":       ref.Namespace,
		prefix + ".name":            ref.Name,
		prefix + ".uid":             string(ref.UID),
		prefix + ".apiVersion":      ref.APIVersion,
		prefix + ".resourceVersion": ref.ResourceVersion,
		prefix + ".fieldPath":       ref.FieldPath,
	}
}

// coreEventRow is the row of a core/v1 Event: the deprecated timestamps and source where
// set, the events.k8s.io fields (eventTime, series, reporting*) where not.
func coreEventRow(e *corev1.Event) eventRow {
	first := e.FirstTimestamp.Time
	if first.IsZero() {
		first = e.EventTime.Time
	}
	last, count := e.LastTimestamp.Time, e.Count
	if last.IsZero() {
		last = first
	}
	if e.Series != nil {
		last, count = e.Series.LastObservedTime.Time, e.Series.Count
	}
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	host := e.Source.Host
	if host == "" {
		host = e.ReportingInstance
	}
	return eventRow{e.Name, first, last, count, e.Type, e.Reason, e.InvolvedObject, source, host, e.Message}
}

func eventTable(row func(runtime.Object) eventRow) *registry.TableDef {
	doc := corev1.Event{}.SwaggerDoc()
	return &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Last Seen", "string", doc["lastTimestamp"], false),
			registry.Column("Type", "string", doc["type"], false),
			registry.Column("Reason", "string", doc["reason"], false),
			registry.Column("Object", "string", doc["involvedObject"], false),
			registry.Column("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"], true),
			registry.Column("Source", "string", doc["source"], true),
			registry.Column("Message", "string", doc["message"], false),
			registry.Column("First Seen", "string", doc["firstTimestamp"], true),
			registry.Column("Count", "string", doc["count"], true),
			{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		},
		Row: func(obj runtime.Object) []any {
			r := row(obj)
			if r.count == 0 {
				r.count = 1 // singleton events of the new API have no count
			}
			target := strings.ToLower(r.regarding.Kind)
			if r.regarding.Name != "" {
				target = fmt.Sprintf("%s/%s", target, r.regarding.Name)
			}
			source := r.source
			if r.host != "" {
				source += ", " + r.host
			}
			return []any{registry.Age(metav1.NewTime(r.last)), r.typ, r.reason, target, r.regarding.FieldPath, source,
				strings.TrimSpace(r.message), registry.Age(metav1.NewTime(r.first)), int64(r.count), r.name}
		},
	}
}

// The longest reportingInstance, action and reason, and note (message), kube takes.
const (
	eventFieldLimit = 128
	eventNoteLimit  = 1024
)

// validateEvent is kube's check of every event (its legacyValidateEvent): the namespaces
// agree and, for an event with an eventTime, the reporting fields are set; reporting names
// the reporting controller's field as the request's version calls it.
func validateEvent(e *corev1.Event, reporting string) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	objNS := e.InvolvedObject.Namespace
	if e.EventTime.IsZero() {
		if (objNS == "" && e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault) || (objNS != "" && objNS != e.Namespace) {
			errs = append(errs, field.Invalid(nsPath, objNS, "does not match event.namespace"))
		}
	} else {
		if objNS == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(nsPath, objNS, "does not match event.namespace"))
		}
		if e.ReportingController == "" {
			errs = append(errs, field.Required(field.NewPath(reporting), ""))
		}
		errs = append(errs, corevalidation.InvalidEach(field.NewPath(reporting), e.ReportingController, utilvalidation.IsQualifiedName(e.ReportingController))...)
		for _, f := range []struct {
			name, value string
			limit       int
			required    bool
		}{{"reportingInstance", e.ReportingInstance, eventFieldLimit, true}, {"action", e.Action, eventFieldLimit, true},
			{"reason", e.Reason, eventFieldLimit, true}, {"message", e.Message, eventNoteLimit, false}} {
			if f.required && f.value == "" {
				errs = append(errs, field.Required(field.NewPath(f.name), ""))
			}
			if len(f.value) > f.limit {
				errs = append(errs, field.Invalid(field.NewPath(f.name), "", fmt.Sprintf("can have at most %d characters", f.limit)))
			}
		}
	}
	return append(errs, corevalidation.InvalidEach(field.NewPath("namespace"), e.Namespace, utilvalidation.IsDNS1123Subdomain(e.Namespace))...)
}

// validateNewEvent is what kube checks more of an event created through events.k8s.io: a
// series of at least two, an eventTime, a type Normal or Warning, and none of the
// deprecated core fields.
func validateNewEvent(e *corev1.Event) field.ErrorList {
	errs := validateSeries(e)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"firstTimestamp", !e.FirstTimestamp.IsZero()}, {"lastTimestamp", !e.LastTimestamp.IsZero()}, {"count", e.Count != 0},
		{"source", e.Source.Component != "" || e.Source.Host != ""}} {
		if f.set {
			errs = append(errs, field.Invalid(field.NewPath(f.name), "", "needs to be unset"))
		}
	}
	return errs
}

// validateEventUpdate is what kube checks more of an update through events.k8s.io: only
// the series may change (and is checked again when it does), eventTime by less than its
// microsecond precision.
func validateEventUpdate(e, old *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if !equality.Semantic.DeepEqual(e.Series, old.Series) {
		errs = validateSeries(e)
	}
	for _, f := range []struct {
		name     string
		new, old any
	}{{"involvedObject", kubeReference(e.InvolvedObject), kubeReference(old.InvolvedObject)}, {"reason", e.Reason, old.Reason},
		{"message", e.Message, old.Message}, {"source", kubeEventSource(e.Source), kubeEventSource(old.Source)},
		{"firstTimestamp", e.FirstTimestamp, old.FirstTimestamp},
		{"lastTimestamp", e.LastTimestamp, old.LastTimestamp}, {"count", e.Count, old.Count}, {"type", e.Type, old.Type},
		{"eventTime", e.EventTime, old.EventTime}, {"action", e.Action, old.Action},
		{"related", kubeReferencePtr(e.Related), kubeReferencePtr(old.Related)},
		{"reportingController", e.ReportingController, old.ReportingController},
		{"reportingInstance", e.ReportingInstance, old.ReportingInstance}} {
		// Clients that send nanoseconds (or truncate them) are not changing the time.
		if f.name == "eventTime" && e.EventTime.Truncate(time.Microsecond).Equal(old.EventTime.Truncate(time.Microsecond)) {
			continue
		}
		errs = append(errs, validation.ValidateImmutableField(f.new, f.old, field.NewPath(f.name))...)
	}
	return errs
}

// validateSeries checks an events.k8s.io series: at least two, with a last observed time.
func validateSeries(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if s := e.Series; s != nil {
		if s.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
		}
		if s.LastObservedTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
		}
	}
	return errs
}

// kubeReference and kubeEventSource are an event's reference and source as kube's errors
// print them: its internal types have no JSON tags, so their values show the Go names.
type kubeReference struct {
	Kind, Namespace, Name                  string
	UID                                    types.UID
	APIVersion, ResourceVersion, FieldPath string
}

type kubeEventSource struct{ Component, Host string }

func kubeReferencePtr(r *corev1.ObjectReference) *kubeReference {
	if r == nil {
		return nil
	}
	k := kubeReference(*r)
	return &k
}
