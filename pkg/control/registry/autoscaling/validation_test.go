package autoscaling

import (
	"slices"
	"strings"
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
			Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("10"))},
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

// Metrics and behavior wrong everywhere are answered as kube-apiserver v1.36.3 answers
// them, message for message and in its order.
func TestHPAMetricAndBehaviorErrors(t *testing.T) {
	h := hpaTo("apps/v1", "Deployment")
	h.Spec.Metrics = []autoscalingv2.MetricSpec{
		{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType}}},
		{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType}}},
		{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "a/b"},
			Target: autoscalingv2.MetricTarget{Type: "Most", Value: ptr.To(resource.MustParse("-1")), AverageValue: ptr.To(resource.MustParse("1"))}},
			Pods: &autoscalingv2.PodsMetricSource{}},
	}
	h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr.To[int32](7200), SelectPolicy: ptr.To[autoscalingv2.ScalingPolicySelect]("Sometimes"),
		Policies:  []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 0, PeriodSeconds: 0}, {Type: "Nodes", Value: 1, PeriodSeconds: 3600}},
		Tolerance: ptr.To(resource.MustParse("-0.1")),
	}, ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](-1), Policies: []autoscalingv2.HPAScalingPolicy{}}}
	DefaultHPA(h)
	var got []string
	for _, e := range HPARules.Validate(h) {
		got = append(got, e.Error())
	}
	want := []string{
		"spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization",
		"spec.metrics[1].pods.metric.name: Required value: must specify a metric name",
		"spec.metrics[1].pods.target.averageValue: Required value: must specify a positive target averageValue",
		`spec.metrics[2].external.metric.name: Invalid value: "a/b": may not contain '/'`,
		`spec.metrics[2].external.target.type: Invalid value: "Most": must be either Utilization, Value, or AverageValue`,
		`spec.metrics[2].external.target.value: Invalid value: "-1": must be positive`,
		"spec.metrics[2].external.target.value: Forbidden: may not set both a target value for metric and a per-pod target",
		"spec.metrics[2].pods: Forbidden: must populate the given metric source only",
		"spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 7200: must be less than or equal to 3600",
		`spec.behavior.scaleUp.selectPolicy: Unsupported value: "Sometimes": supported values: "Disabled", "Max", "Min"`,
		"spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
		"spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 0: must be greater than zero",
		`spec.behavior.scaleUp.policies[1].type: Unsupported value: "Nodes": supported values: "Percent", "Pods"`,
		"spec.behavior.scaleUp.policies[1].periodSeconds: Invalid value: 3600: must be less than or equal to 1800",
		`spec.behavior.scaleUp.tolerance: Invalid value: "-100m": must be greater than or equal to 0`,
		"spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: -1: must be greater than or equal to zero",
		"spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
