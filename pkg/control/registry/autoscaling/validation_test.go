package autoscaling

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func hpaTo(apiVersion, kind string) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: "web"},
			MaxReplicas:    3,
		},
	}
	DefaultHPA(h)
	return h
}

func onlyError(t *testing.T, errs field.ErrorList, want string) {
	t.Helper()
	if want == "" {
		if len(errs) != 0 {
			t.Errorf("got %v, want no error", errs)
		}
		return
	}
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v, want only %q", errs, want)
	}
}

// The scale target needs an API group, as kube-apiserver's HPA strategy has it, but for a
// ReplicationController (core v1) and for an update that keeps the old target's apiVersion and kind.
func TestHPAScaleTargetAPIVersion(t *testing.T) {
	const noGroup = `spec.scaleTargetRef.apiVersion: Invalid value: "v1": apiVersion must specify API group`
	onlyError(t, HPARules.Validate(hpaTo("v1", "Deployment")), noGroup)
	onlyError(t, HPARules.Validate(hpaTo("", "Deployment")), `spec.scaleTargetRef.apiVersion: Invalid value: "": apiVersion must specify API group`)
	onlyError(t, HPARules.Validate(hpaTo("a/b/c", "Deployment")), `spec.scaleTargetRef.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c`)
	onlyError(t, HPARules.Validate(hpaTo("apps/v1", "Deployment")), "")
	onlyError(t, HPARules.Validate(hpaTo("v1", "ReplicationController")), "")
	onlyError(t, HPARules.Validate(hpaTo("apps/v1", "Deploy/ment")), `spec.scaleTargetRef.kind: Invalid value: "Deploy/ment": may not contain '/'`)

	old := hpaTo("v1", "Deployment")
	onlyError(t, HPARules.ValidateUpdate(hpaTo("v1", "Deployment"), old), "")
	onlyError(t, HPARules.ValidateUpdate(hpaTo("v1", "StatefulSet"), old), `spec.scaleTargetRef.apiVersion: Invalid value: "v1": apiVersion must specify API group`)
	onlyError(t, HPARules.ValidateUpdate(hpaTo("extensions/v1beta1", "Deployment"), old), "")
}

// An Object metric's described object may be core v1 but its apiVersion must parse, unless
// the old autoscaler already had one that did not.
func TestHPAObjectMetricAPIVersion(t *testing.T) {
	withObject := func(apiVersion string) *autoscalingv2.HorizontalPodAutoscaler {
		h := hpaTo("apps/v1", "Deployment")
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: "Service", Name: "web"},
			Metric:          autoscalingv2.MetricIdentifier{Name: "qps"},
			Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType},
		}}}
		return h
	}
	onlyError(t, HPARules.Validate(withObject("v1")), "")
	onlyError(t, HPARules.Validate(withObject("a/b/c")), `spec.metrics[0].object.describedObject.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c`)
	onlyError(t, HPARules.ValidateUpdate(withObject("x/y/z"), withObject("a/b/c")), "")
}

// Replica bounds in kube-apiserver's words: an unset maximum is required, a negative one
// invalid, and a minimum of 0 needs a metric that can be read with no pod running.
func TestHPAReplicaBounds(t *testing.T) {
	withReplicas := func(min, max int32) *autoscalingv2.HorizontalPodAutoscaler {
		h := hpaTo("apps/v1", "Deployment")
		h.Spec.MinReplicas, h.Spec.MaxReplicas = &min, max
		return h
	}
	const belowMin = "must be greater than or equal to `minReplicas`"
	if got := HPARules.Validate(withReplicas(1, 0)).ToAggregate().Error(); got != "[spec.maxReplicas: Required value: must be set and greater than 0, spec.maxReplicas: Invalid value: 0: "+belowMin+"]" {
		t.Errorf("maxReplicas 0: got %s", got)
	}
	if got := HPARules.Validate(withReplicas(1, -1)).ToAggregate().Error(); got != "[spec.maxReplicas: Invalid value: -1: must be greater than or equal to 1, spec.maxReplicas: Invalid value: -1: "+belowMin+"]" {
		t.Errorf("maxReplicas -1: got %s", got)
	}
	onlyError(t, HPARules.Validate(withReplicas(3, 2)), "spec.maxReplicas: Invalid value: 2: "+belowMin)

	toZero := withReplicas(0, 2)
	errs := HPARules.Validate(toZero)
	if len(errs) != 2 || errs[1].Error() != "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas" {
		t.Errorf("minReplicas 0 on CPU: got %v", errs)
	}
	toZero.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("10"))},
	}}}
	onlyError(t, HPARules.Validate(toZero), "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1")
}
