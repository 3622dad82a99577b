package autoscaling

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
