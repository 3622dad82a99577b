// Package autoscaling holds the rules of HorizontalPodAutoscalers, stored as autoscaling/v2
// and also served as autoscaling/v1 by converting each read and write, as Kubernetes'
// pkg/registry/autoscaling has them.
package autoscaling

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// HorizontalPodAutoscalers are stored as autoscaling/v2, the version Kubernetes stores and
// prefers; autoscaling/v1 (what kubectl autoscale up to 1.32 writes) is a view of it
// (hpaconversion.go).

// DefaultCPUUtilization is the target of an autoscaler that names no metric.
const DefaultCPUUtilization = 80

var HPARules = registry.Rules{
	SubresourceUpdates: map[string]registry.SubresourceRules{"status": {Validate: func(obj, _ runtime.Object) field.ErrorList {
		s := &obj.(*autoscalingv2.HorizontalPodAutoscaler).Status
		return validateHPAStatus(s.CurrentReplicas, s.DesiredReplicas)
	}}},
	Default: func(obj runtime.Object) { DefaultHPA(obj.(*autoscalingv2.HorizontalPodAutoscaler)) },
	PrepareCreate: func(obj runtime.Object) {
		obj.(*autoscalingv2.HorizontalPodAutoscaler).Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateHPA(obj.(*autoscalingv2.HorizontalPodAutoscaler), nil)
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return validateHPA(obj.(*autoscalingv2.HorizontalPodAutoscaler), old.(*autoscalingv2.HorizontalPodAutoscaler))
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Reference", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"], false),
			registry.Column("Targets", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"], false),
			// Strings, as kube's: MinPods may be "<unset>".
			registry.Column("MinPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"], false),
			registry.Column("MaxPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"], false),
			registry.Column("Replicas", "string", autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"], false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			h := obj.(*autoscalingv2.HorizontalPodAutoscaler)
			ref := h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name
			min := "<unset>"
			if h.Spec.MinReplicas != nil {
				min = fmt.Sprint(*h.Spec.MinReplicas)
			}
			return []any{h.Name, ref, hpaTargets(h.Spec.Metrics, h.Status.CurrentMetrics), min,
				int64(h.Spec.MaxReplicas), int64(h.Status.CurrentReplicas), registry.Age(h.CreationTimestamp)}
		},
	},
}

// DefaultHPA is autoscaling/v2's defaulting: one replica at least, 80% of the CPU requested
// when no metric is named, and the default scaling rules filled into a behavior given.
func DefaultHPA(h *autoscalingv2.HorizontalPodAutoscaler) {
	registry.DefaultInt32(&h.Spec.MinReplicas, 1)
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{cpuMetric(DefaultCPUUtilization)}
	}
	if b := h.Spec.Behavior; b != nil {
		b.ScaleUp = defaultScalingRules(b.ScaleUp, ScaleUpRules())
		b.ScaleDown = defaultScalingRules(b.ScaleDown, ScaleDownRules())
	}
}

// ScaleUpRules are the default rules for scaling up: no stabilization, at most 4 pods or
// double the replicas every 15 seconds, whichever adds more.
func ScaleUpRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr.To[int32](0),
		SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// ScaleDownRules are the default rules for scaling down: down to the recommendation at
// once. As kube's, they leave the window unset: the controller's own (5 minutes) applies.
func ScaleDownRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
	}
}

func defaultScalingRules(r, def *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if r == nil {
		return def
	}
	if r.StabilizationWindowSeconds == nil {
		r.StabilizationWindowSeconds = def.StabilizationWindowSeconds
	}
	if r.SelectPolicy == nil {
		r.SelectPolicy = def.SelectPolicy
	}
	if r.Policies == nil { // an empty list given stays, and is refused, as in kube
		r.Policies = def.Policies
	}
	return r
}

// validateHPA is Kubernetes' autoscaling validation, messages included; old is nil on create.
func validateHPA(h, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	errs := registry.ValidateMeta(h, true, validation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	s := &h.Spec
	if s.MinReplicas != nil && *s.MinReplicas < 1 {
		errs = append(errs, field.Invalid(spec.Child("minReplicas"), *s.MinReplicas, "must be greater than or equal to 1"))
	}
	if s.MaxReplicas == 0 {
		errs = append(errs, field.Required(spec.Child("maxReplicas"), "must be set and greater than 0"))
	} else if s.MaxReplicas < 0 {
		errs = append(errs, field.Invalid(spec.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to 1"))
	}
	if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs = append(errs, field.Invalid(spec.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	errs = append(errs, validateObjectRef(&s.ScaleTargetRef, spec.Child("scaleTargetRef"), scaleTargetAPIVersionRule(h, old))...)
	objectRefs := allowEmptyGroup
	if old != nil && hasInvalidObjectMetric(old.Spec.Metrics) {
		objectRefs = allowAnyVersion // already invalid: an update need not fix it
	}
	objectOrExternal := false // the only metrics that can be read at zero pods
	for i := range s.Metrics {
		errs = append(errs, validateMetricSpec(&s.Metrics[i], spec.Child("metrics").Index(i), objectRefs)...)
		objectOrExternal = objectOrExternal || s.Metrics[i].Type == autoscalingv2.ObjectMetricSourceType || s.Metrics[i].Type == autoscalingv2.ExternalMetricSourceType
	}
	if s.MinReplicas != nil && *s.MinReplicas == 0 && !objectOrExternal {
		errs = append(errs, field.Forbidden(spec.Child("metrics"), "must specify at least one Object or External metric to support scaling to zero replicas"))
	}
	if b := s.Behavior; b != nil {
		errs = append(errs, validateScalingRules(b.ScaleUp, spec.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateScalingRules(b.ScaleDown, spec.Child("behavior", "scaleDown"))...)
	}
	return errs
}

// apiVersionRule is how strictly an object reference's apiVersion is checked, kube's
// CrossVersionObjectReferenceValidationOptions.
type apiVersionRule int

const (
	requireGroup    apiVersionRule = iota // a group/version
	allowEmptyGroup                       // a version alone (core v1) too
	allowAnyVersion                       // not checked
)

// scaleTargetAPIVersionRule is kube's HPA strategy: the target needs an API group unless it
// is a ReplicationController (the one scalable core kind) or an update keeps the old
// target's apiVersion and kind.
func scaleTargetAPIVersionRule(h, old *autoscalingv2.HorizontalPodAutoscaler) apiVersionRule {
	ref := h.Spec.ScaleTargetRef
	switch {
	case old != nil && old.Spec.ScaleTargetRef.APIVersion == ref.APIVersion && old.Spec.ScaleTargetRef.Kind == ref.Kind:
		return allowAnyVersion
	case ref.Kind == "ReplicationController":
		return allowEmptyGroup
	}
	return requireGroup
}

// validateObjectRef is kube's ValidateCrossVersionObjectReference.
func validateObjectRef(ref *autoscalingv2.CrossVersionObjectReference, p *field.Path, rule apiVersionRule) field.ErrorList {
	var errs field.ErrorList
	if ref.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else {
		errs = append(errs, corevalidation.InvalidEach(p.Child("kind"), ref.Kind, path.IsValidPathSegmentName(ref.Kind))...)
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, corevalidation.InvalidEach(p.Child("name"), ref.Name, path.IsValidPathSegmentName(ref.Name))...)
	}
	if err := checkAPIVersion(ref.APIVersion, rule); err != nil {
		errs = append(errs, field.Invalid(p.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	return errs
}

func checkAPIVersion(apiVersion string, rule apiVersionRule) error {
	if rule == allowAnyVersion {
		return nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return err
	}
	if rule == requireGroup && gv.Group == "" {
		return errors.New("apiVersion must specify API group")
	}
	return nil
}

// hasInvalidObjectMetric tells whether an Object metric names an apiVersion that does not parse.
func hasInvalidObjectMetric(metrics []autoscalingv2.MetricSpec) bool {
	for _, m := range metrics {
		if m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil &&
			checkAPIVersion(m.Object.DescribedObject.APIVersion, allowEmptyGroup) != nil {
			return true
		}
	}
	return false
}

// metricSourceTypes are kube's, sorted as its errors list them.
var metricSourceTypes = []string{"ContainerResource", "External", "Object", "Pods", "Resource"}

// validateMetricSpec is kube's: the type, then the first source given (in kube's order:
// object, external, pods, resource, containerResource), the source the type names, and any
// other source given.
func validateMetricSpec(m *autoscalingv2.MetricSpec, p *field.Path, objectRefs apiVersionRule) field.ErrorList {
	var errs field.ErrorList
	if m.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric source type"))
	}
	if !slices.Contains(metricSourceTypes, string(m.Type)) {
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, metricSourceTypes))
	}
	sources := []struct {
		name     string
		kind     autoscalingv2.MetricSourceType
		given    bool
		validate func() field.ErrorList
	}{
		{"object", autoscalingv2.ObjectMetricSourceType, m.Object != nil, func() field.ErrorList { return validateObjectSource(m.Object, p.Child("object"), objectRefs) }},
		{"external", autoscalingv2.ExternalMetricSourceType, m.External != nil, func() field.ErrorList { return validateExternalSource(m.External, p.Child("external")) }},
		{"pods", autoscalingv2.PodsMetricSourceType, m.Pods != nil, func() field.ErrorList { return validatePodsSource(m.Pods, p.Child("pods")) }},
		{"resource", autoscalingv2.ResourceMetricSourceType, m.Resource != nil, func() field.ErrorList {
			return validateResourceSource(m.Resource, p.Child("resource"))
		}},
		{"containerResource", autoscalingv2.ContainerResourceMetricSourceType, m.ContainerResource != nil, func() field.ErrorList {
			return validateContainerResourceSource(m.ContainerResource, p.Child("containerResource"))
		}},
	}
	var present []string
	for _, src := range sources {
		if src.given {
			present = append(present, src.name)
			if len(present) == 1 {
				errs = append(errs, src.validate()...)
			}
		}
	}
	expected := ""
	for _, src := range sources {
		if src.kind == m.Type {
			expected = src.name
			if !src.given {
				errs = append(errs, field.Required(p.Child(src.name), "must populate information for the given metric source"))
			}
		}
	}
	if expected == "" { // kube's switch refuses the type a second time
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, metricSourceTypes))
	}
	if len(present) > 1 {
		for _, name := range present {
			if name != expected {
				errs = append(errs, field.Forbidden(p.Child(name), "must populate the given metric source only"))
			}
		}
	}
	return errs
}

func validateObjectSource(src *autoscalingv2.ObjectMetricSource, p *field.Path, objectRefs apiVersionRule) field.ErrorList {
	errs := validateObjectRef(&src.DescribedObject, p.Child("describedObject"), objectRefs)
	errs = append(errs, validateMetricIdentifier(src.Metric, p.Child("metric"))...)
	errs = append(errs, validateMetricTarget(src.Target, p.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value or averageValue"))
	}
	return errs
}

func validateExternalSource(src *autoscalingv2.ExternalMetricSource, p *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(src.Metric, p.Child("metric"))
	errs = append(errs, validateMetricTarget(src.Target, p.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value for metric or a per-pod target"))
	}
	if src.Target.Value != nil && src.Target.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "value"), "may not set both a target value for metric and a per-pod target"))
	}
	return errs
}

func validatePodsSource(src *autoscalingv2.PodsMetricSource, p *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(src.Metric, p.Child("metric"))
	errs = append(errs, validateMetricTarget(src.Target, p.Child("target"))...)
	if src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must specify a positive target averageValue"))
	}
	return errs
}

func validateContainerResourceSource(src *autoscalingv2.ContainerResourceMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if src.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	} else {
		errs = append(errs, corevalidation.ValidateContainerResourceName(src.Name, p.Child("name"))...)
	}
	if src.Container == "" {
		errs = append(errs, field.Required(p.Child("container"), "must specify a container"))
	} else {
		errs = append(errs, corevalidation.DNSLabel(src.Container, p.Child("container"))...)
	}
	return append(errs, validateUtilizationTarget(src.Target, p.Child("target"))...)
}

// validateResourceSource is kube's for a Resource metric: a name and a target of a raw
// value or a utilization.
func validateResourceSource(src *autoscalingv2.ResourceMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if src.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	}
	return append(errs, validateUtilizationTarget(src.Target, p.Child("target"))...)
}

// validateUtilizationTarget is a resource metric's target: an average value or a
// utilization, one of them.
func validateUtilizationTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	errs := validateMetricTarget(t, p)
	if t.AverageUtilization == nil && t.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if t.AverageUtilization != nil && t.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

func validateMetricTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric target type"))
	}
	if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		errs = append(errs, field.Invalid(p.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("value"), t.Value.String(), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("averageValue"), t.AverageValue.String(), "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(p.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

func validateMetricIdentifier(id autoscalingv2.MetricIdentifier, p *field.Path) field.ErrorList {
	if id.Name == "" {
		return field.ErrorList{field.Required(p.Child("name"), "must specify a metric name")}
	}
	return corevalidation.InvalidEach(p.Child("name"), id.Name, content.IsPathSegmentName(id.Name))
}

// The bounds of kube's scaling rules.
const (
	maxStabilizationWindowSeconds = 3600
	maxPeriodSeconds              = 1800
)

func validateScalingRules(r *autoscalingv2.HPAScalingRules, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil && *w < 0 {
		errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w, "must be greater than or equal to zero"))
	}
	if w := r.StabilizationWindowSeconds; w != nil && *w > maxStabilizationWindowSeconds {
		errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w, fmt.Sprintf("must be less than or equal to %d", maxStabilizationWindowSeconds)))
	}
	if sp := r.SelectPolicy; sp != nil {
		switch *sp {
		case autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect:
		default:
			errs = append(errs, field.NotSupported(p.Child("selectPolicy"), *sp, []string{"Disabled", "Max", "Min"}))
		}
	}
	if len(r.Policies) == 0 {
		errs = append(errs, field.Required(p.Child("policies"), "must specify at least one Policy"))
	}
	for i, pol := range r.Policies {
		pp := p.Child("policies").Index(i)
		if pol.Type != autoscalingv2.PodsScalingPolicy && pol.Type != autoscalingv2.PercentScalingPolicy {
			errs = append(errs, field.NotSupported(pp.Child("type"), pol.Type, []string{"Percent", "Pods"}))
		}
		if pol.Value <= 0 {
			errs = append(errs, field.Invalid(pp.Child("value"), pol.Value, "must be greater than zero"))
		}
		if pol.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), pol.PeriodSeconds, "must be greater than zero"))
		}
		if pol.PeriodSeconds > maxPeriodSeconds {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), pol.PeriodSeconds, fmt.Sprintf("must be less than or equal to %d", maxPeriodSeconds)))
		}
	}
	if tol := r.Tolerance; tol != nil && tol.Sign() < 0 {
		errs = append(errs, field.Invalid(p.Child("tolerance"), tol.String(), validation.IsNegativeErrorMsg))
	}
	return errs
}

// hpaTargets is the TARGETS column, two metrics at most, as kube's printer
// (formatHPAMetrics) writes it.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	var list []string
	for i, spec := range specs {
		var st autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = statuses[i]
		}
		list = append(list, metricTarget(spec, st))
	}
	if len(list) > 2 {
		return strings.Join(list[:2], ", ") + fmt.Sprintf(" + %d more...", len(list)-2)
	}
	return strings.Join(list, ", ")
}

// metricTarget is one metric of the TARGETS column, "current/target": a resource's after
// its name, an object's or external metric's average followed by "(avg)", and
// "<unknown>" for the current value until the status has one.
func metricTarget(spec autoscalingv2.MetricSpec, st autoscalingv2.MetricStatus) string {
	const unknown = "<unknown>"
	switch spec.Type {
	case autoscalingv2.ExternalMetricSourceType:
		var cur *autoscalingv2.MetricValueStatus
		if st.External != nil {
			cur = &st.External.Current
		}
		return valueOrAverage(spec.External.Target, cur)
	case autoscalingv2.ObjectMetricSourceType:
		var cur *autoscalingv2.MetricValueStatus
		if st.Object != nil {
			cur = &st.Object.Current
		}
		return valueOrAverage(spec.Object.Target, cur)
	case autoscalingv2.PodsMetricSourceType:
		current := unknown
		if st.Pods != nil {
			current = st.Pods.Current.AverageValue.String()
		}
		return current + "/" + spec.Pods.Target.AverageValue.String()
	case autoscalingv2.ResourceMetricSourceType:
		var cur *autoscalingv2.MetricValueStatus
		if st.Resource != nil {
			cur = &st.Resource.Current
		}
		return string(spec.Resource.Name) + ": " + averageOrUtilization(spec.Resource.Target, cur)
	case autoscalingv2.ContainerResourceMetricSourceType:
		var cur *autoscalingv2.MetricValueStatus
		if st.ContainerResource != nil {
			cur = &st.ContainerResource.Current
		}
		return string(spec.ContainerResource.Name) + ": " + averageOrUtilization(spec.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}

// valueOrAverage is an object's or external metric: its average with "(avg)", else its value.
func valueOrAverage(target autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if target.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return current + "/" + target.AverageValue.String() + " (avg)"
	}
	if cur != nil {
		current = cur.Value.String()
	}
	return current + "/" + target.Value.String()
}

// averageOrUtilization is a resource metric: its average value, else its utilization.
func averageOrUtilization(target autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if target.AverageValue != nil {
		if cur != nil {
			current = cur.AverageValue.String()
		}
		return current + "/" + target.AverageValue.String()
	}
	if cur != nil && cur.AverageUtilization != nil {
		current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
	}
	want := "<auto>"
	if target.AverageUtilization != nil {
		want = fmt.Sprintf("%d%%", *target.AverageUtilization)
	}
	return current + "/" + want
}

// validateHPAStatus is kube's ValidateHorizontalPodAutoscalerStatusUpdate: the replica
// counts, nothing else of the status.
func validateHPAStatus(current, desired int32) field.ErrorList {
	return registry.StatusCounts(field.NewPath("status"), registry.Count32("currentReplicas", current), registry.Count32("desiredReplicas", desired))
}
