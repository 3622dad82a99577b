package autoscaling

import (
	"reflect"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A v2 autoscaler read as v1 and written back as v1 keeps what v1 cannot say (memory
// metrics, behavior, conditions), and its CPU target is v1's.
func TestHPAConversionRoundTrip(t *testing.T) {
	mem := resource.MustParse("100Mi")
	v2 := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{"team": "a"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 7,
			Metrics: []autoscalingv2.MetricSpec{cpuMetric(60), {Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &mem}}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](30)}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, DesiredReplicas: 4,
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededGetScale"}}},
	}
	DefaultHPA(v2)
	obj, err := hpaFromV2(v2.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	v1 := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	if got := ptr.Deref(v1.Spec.TargetCPUUtilizationPercentage, 0); got != 60 {
		t.Errorf("v1 CPU target %d, want 60", got)
	}
	for _, key := range []string{metricsAnnotation, behaviorAnnotation, conditionsAnnotation} {
		if v1.Annotations[key] == "" {
			t.Errorf("v1 form lacks annotation %s: %v", key, v1.Annotations)
		}
	}
	back, err := hpaToV2(v1)
	if err != nil {
		t.Fatal(err)
	}
	got := back.(*autoscalingv2.HorizontalPodAutoscaler)
	got.TypeMeta = v2.TypeMeta
	if !reflect.DeepEqual(got.Spec, v2.Spec) || !reflect.DeepEqual(got.Status, v2.Status) || !reflect.DeepEqual(got.Annotations, v2.Annotations) {
		t.Errorf("round trip changed the autoscaler:\n got %+v\nwant %+v", got, v2)
	}
	if len(v1.Annotations) == len(v2.Annotations) {
		t.Error("converting to v2 should take the conversion annotations out again")
	}
}

// A v1 autoscaler without a CPU target is stored with v2's default: 80% CPU.
func TestHPAV1DefaultTarget(t *testing.T) {
	v1 := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, MaxReplicas: 3}}
	HPAV1Rules.Default(v1)
	if errs := HPAV1Rules.Validate(v1); len(errs) != 0 {
		t.Fatalf("valid v1 autoscaler refused: %v", errs)
	}
	obj, err := hpaToV2(v1)
	if err != nil {
		t.Fatal(err)
	}
	v2 := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if len(v2.Spec.Metrics) != 1 || !isCPUUtilization(v2.Spec.Metrics[0]) || *v2.Spec.Metrics[0].Resource.Target.AverageUtilization != DefaultCPUUtilization {
		t.Errorf("metrics %+v, want the default CPU target", v2.Spec.Metrics)
	}
	if *v2.Spec.MinReplicas != 1 {
		t.Errorf("minReplicas %d, want 1", *v2.Spec.MinReplicas)
	}
	v1.Spec.MaxReplicas = 0
	if errs := HPAV1Rules.Validate(v1); len(errs) == 0 {
		t.Error("maxReplicas 0 accepted")
	}
}

// TestHPABehaviorDefaultsAsKube: a behavior given in part is filled as kube's
// SetDefaults_HorizontalPodAutoscalerBehavior fills it: scale-up's window 0, scale-down's
// left unset (the controller's --horizontal-pod-autoscaler-downscale-stabilization decides,
// 5 minutes), both policies kube's.
func TestHPABehaviorDefaultsAsKube(t *testing.T) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas: 3, Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{}}}
	HPARules.Default(hpa)
	max := autoscalingv2.MaxChangePolicySelect
	want := &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: &max, Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15}, {Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}},
		ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: &max, Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}},
	}
	if !reflect.DeepEqual(hpa.Spec.Behavior, want) {
		t.Errorf("behavior\n%+v %+v\nwant\n%+v %+v", hpa.Spec.Behavior.ScaleUp, hpa.Spec.Behavior.ScaleDown, want.ScaleUp, want.ScaleDown)
	}
}
