package autoscaling

import (
	"encoding/json"
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/registry"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// autoscaling/v1 holds one metric, the CPU utilization; what else a v2 autoscaler says
// travels in these annotations of the v1 form, as kube-apiserver's conversion carries it,
// so a v1 client's read-modify-write loses nothing. minik8s writes their values in the v2
// form (kube-apiserver writes v2beta1-shaped ones).
const (
	metricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	currentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	conditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	behaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
)

var HPAV1Rules = registry.Rules{
	SubresourceUpdates: map[string]registry.SubresourceRules{"status": {Validate: func(obj, _ runtime.Object) field.ErrorList {
		s := &obj.(*autoscalingv1.HorizontalPodAutoscaler).Status
		return validateHPAStatus(s.CurrentReplicas, s.DesiredReplicas)
	}}},
	Default: func(obj runtime.Object) {
		registry.DefaultInt32(&obj.(*autoscalingv1.HorizontalPodAutoscaler).Spec.MinReplicas, 1)
	},
	PrepareCreate: func(obj runtime.Object) {
		obj.(*autoscalingv1.HorizontalPodAutoscaler).Status = autoscalingv1.HorizontalPodAutoscalerStatus{}
	},
	Validate:       viaV2(HPARules.Validate),
	ValidateUpdate: func(obj, _ runtime.Object) field.ErrorList { return viaV2(HPARules.Validate)(obj) },
	Table: &registry.TableDef{Columns: HPARules.Table.Columns, Row: func(obj runtime.Object) []any {
		v2, err := hpaToV2(obj)
		if err != nil {
			return []any{obj.(*autoscalingv1.HorizontalPodAutoscaler).Name, err.Error(), "", "", int64(0), int64(0), ""}
		}
		return HPARules.Table.Row(v2)
	}},
}

// viaV2 validates a v1 autoscaler as the v2 object it is stored as.
func viaV2(validate func(runtime.Object) field.ErrorList) func(runtime.Object) field.ErrorList {
	return func(obj runtime.Object) field.ErrorList {
		v2, err := hpaToV2(obj)
		if err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations"), "", err.Error())}
		}
		return validate(v2)
	}
}

// HPAV1Conversion serves autoscaling/v1 over the v2 objects of storage.
func HPAV1Conversion(storage *registry.Resource) *registry.Conversion {
	return &registry.Conversion{Storage: storage, ToStorage: hpaToV2, FromStorage: hpaFromV2}
}

// hpaToV2 converts a v1 autoscaler to v2 (without changing it): the CPU target becomes the
// first metric, the annotations give back the rest.
func hpaToV2(obj runtime.Object) (runtime.Object, error) {
	in := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	out := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.APIVersion, out.Kind = autoscalingv2.SchemeGroupVersion.String(), "HorizontalPodAutoscaler"
	ann := out.Annotations
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
		MinReplicas:    in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
	}
	if t := in.Spec.TargetCPUUtilizationPercentage; t != nil {
		u := *t
		out.Spec.Metrics = append(out.Spec.Metrics, cpuMetric(u))
	}
	s := &in.Status
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{ObservedGeneration: s.ObservedGeneration,
		LastScaleTime: s.LastScaleTime, CurrentReplicas: s.CurrentReplicas, DesiredReplicas: s.DesiredReplicas}
	if c := s.CurrentCPUUtilizationPercentage; c != nil {
		u := *c
		out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &u}}})
	}
	for _, a := range []struct {
		key  string
		into any
	}{
		{metricsAnnotation, &out.Spec.Metrics}, {behaviorAnnotation, &out.Spec.Behavior},
		{currentMetricsAnnotation, &out.Status.CurrentMetrics}, {conditionsAnnotation, &out.Status.Conditions},
	} {
		v, ok := ann[a.key]
		if !ok {
			continue
		}
		delete(ann, a.key)
		if err := unmarshalAppend(v, a.into); err != nil {
			return nil, fmt.Errorf("annotation %s: %w", a.key, err)
		}
	}
	if len(ann) == 0 {
		out.Annotations = nil
	}
	DefaultHPA(out)
	return out, nil
}

// unmarshalAppend decodes a JSON list onto the end of the list into points at, or a JSON
// object into the pointer it points at.
func unmarshalAppend(v string, into any) error {
	switch p := into.(type) {
	case *[]autoscalingv2.MetricSpec:
		var more []autoscalingv2.MetricSpec
		err := json.Unmarshal([]byte(v), &more)
		*p = append(*p, more...)
		return err
	case *[]autoscalingv2.MetricStatus:
		var more []autoscalingv2.MetricStatus
		err := json.Unmarshal([]byte(v), &more)
		*p = append(*p, more...)
		return err
	default:
		return json.Unmarshal([]byte(v), into)
	}
}

// hpaFromV2 converts a stored v2 autoscaler to v1: its first CPU utilization metric is the
// v1 target, everything else goes into annotations.
func hpaFromV2(obj runtime.Object) (runtime.Object, error) {
	in := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	out := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
		MinReplicas:    in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
	}
	var others []autoscalingv2.MetricSpec
	for _, m := range in.Spec.Metrics {
		if out.Spec.TargetCPUUtilizationPercentage == nil && isCPUUtilization(m) {
			u := *m.Resource.Target.AverageUtilization
			out.Spec.TargetCPUUtilizationPercentage = &u
			continue
		}
		others = append(others, m)
	}
	s := &in.Status
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{ObservedGeneration: s.ObservedGeneration,
		LastScaleTime: s.LastScaleTime, CurrentReplicas: s.CurrentReplicas, DesiredReplicas: s.DesiredReplicas}
	var otherStatus []autoscalingv2.MetricStatus
	for _, m := range s.CurrentMetrics {
		if out.Status.CurrentCPUUtilizationPercentage == nil && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			u := *m.Resource.Current.AverageUtilization
			out.Status.CurrentCPUUtilizationPercentage = &u
			continue
		}
		otherStatus = append(otherStatus, m)
	}
	for _, a := range []struct {
		key   string
		value any
		set   bool
	}{
		{metricsAnnotation, others, len(others) > 0}, {behaviorAnnotation, in.Spec.Behavior, in.Spec.Behavior != nil},
		{currentMetricsAnnotation, otherStatus, len(otherStatus) > 0}, {conditionsAnnotation, s.Conditions, len(s.Conditions) > 0},
	} {
		if !a.set {
			continue
		}
		b, err := json.Marshal(a.value)
		if err != nil {
			return nil, err
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[a.key] = string(b)
	}
	return out, nil
}

func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
		m.Resource.Target.Type == autoscalingv2.UtilizationMetricType && m.Resource.Target.AverageUtilization != nil
}

func cpuMetric(utilization int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &utilization}}}
}
