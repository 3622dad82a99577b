package podautoscaler

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	fakescale "k8s.io/client-go/scale/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// fixedMetrics serves the same samples for every query, by resource.
type fixedMetrics map[corev1.ResourceName]podMetrics

func (f fixedMetrics) PodMetrics(_ context.Context, _ string, _ labels.Selector, res corev1.ResourceName, _ string) (podMetrics, error) {
	out := podMetrics{}
	for k, v := range f[res] {
		out[k] = v
	}
	return out, nil
}

// reconcileOnce runs one reconcile of hpa over a Deployment "web" of 2 replicas whose pods
// are pods (or over an apps/v1 target of kind, when named), and returns the autoscaler and
// the Events recorded.
func reconcileOnce(t *testing.T, hpa *autoscalingv2.HorizontalPodAutoscaler, pods []*corev1.Pod, metrics fixedMetrics, kind ...string) (*autoscalingv2.HorizontalPodAutoscaler, []string) {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods()
	for _, p := range pods {
		p = p.DeepCopy()
		p.Namespace, p.Labels = "default", map[string]string{"app": "web"}
		if err := podInformer.Informer().GetStore().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	scales := &fakescale.FakeScaleClient{}
	scales.AddReactor("get", "deployments", func(core.Action) (bool, runtime.Object, error) {
		return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: autoscalingv1.ScaleSpec{Replicas: 2}, Status: autoscalingv1.ScaleStatus{Replicas: 2, Selector: "app=web"}}, nil
	})
	scales.AddReactor("update", "deployments", func(a core.Action) (bool, runtime.Object, error) {
		return true, a.(core.UpdateAction).GetObject(), nil
	})
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	rec := record.NewFakeRecorder(20)
	clk := clocktesting.NewFakeClock(t0)
	opts := DefaultOptions()
	c := &Controller{client: client, scales: scales, mapper: mapper, metrics: metrics, pods: podInformer.Lister(),
		recorder: rec, clock: clk, opts: opts, history: newHistory(), log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		calc: calculator{tolerance: opts.Tolerance, cpuInitializationPeriod: opts.CPUInitializationPeriod,
			initialReadinessDelay: opts.InitialReadinessDelay, now: clk.Now}}
	hpa = hpa.DeepCopy()
	hpa.Name, hpa.Namespace = "web", "default"
	hpa.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	if len(kind) > 0 {
		hpa.Spec.ScaleTargetRef.Kind = kind[0]
	}
	hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas = ptr.To[int32](1), 5
	_ = c.reconcile(context.Background(), "default/web", hpa)
	close(rec.Events)
	var events []string
	for e := range rec.Events {
		events = append(events, e)
	}
	return hpa, events
}

func condition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) autoscalingv2.HorizontalPodAutoscalerCondition {
	for _, c := range hpa.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}
}

func cpuUtilization(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(percent)}}}
}

// When every metric fails, ScalingActive tells the first failure, and the
// FailedComputeMetricsReplicas Event is the error itself, as kube-controller-manager's
// computeReplicasForMetrics and reconcileAutoscaler have it.
func TestAllMetricsFailing(t *testing.T) {
	noRequests := pod("p0", corev1.PodRunning, corev1.ConditionTrue)
	noRequests.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{Metrics: []autoscalingv2.MetricSpec{
		cpuUtilization(50),
		{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
			Name: corev1.ResourceMemory, Container: "c", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}},
	}}}
	got, events := reconcileOnce(t, hpa, []*corev1.Pod{noRequests},
		fixedMetrics{corev1.ResourceCPU: {"p0": sample(10)}, corev1.ResourceMemory: {"p0": sample(10)}})
	if c := condition(got, autoscalingv2.ScalingActive); c.Reason != "FailedGetResourceMetric" ||
		c.Message != "the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container c of Pod p0" {
		t.Errorf("ScalingActive: %+v", c)
	}
	want := "Warning FailedComputeMetricsReplicas invalid metrics (2 invalid out of 2), first error is: failed to get cpu resource metric value: failed to get cpu utilization: missing request for cpu in container c of Pod p0"
	if len(events) != 3 || events[2] != want {
		t.Errorf("events:\n%s\nwant last: %s", strings.Join(events, "\n"), want)
	}
}

// Idle pods (0m CPU) scale the target down, and ScalingActive names the metric that
// decided, as kube does for a proposal of zero replicas.
func TestIdlePodsNameTheMetric(t *testing.T) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{Metrics: []autoscalingv2.MetricSpec{cpuUtilization(50)}}}
	got, _ := reconcileOnce(t, hpa, []*corev1.Pod{pod("p0", corev1.PodRunning, corev1.ConditionTrue), pod("p1", corev1.PodRunning, corev1.ConditionTrue)},
		fixedMetrics{corev1.ResourceCPU: {"p0": sample(0), "p1": sample(0)}})
	if c := condition(got, autoscalingv2.ScalingActive); c.Reason != "ValidMetricFound" ||
		c.Message != "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)" {
		t.Errorf("ScalingActive: %+v", c)
	}
}

// Memory usage is shown in binary units (Ki, Mi), as metrics-server and kube's
// buildQuantity show it: kubectl get hpa's TARGETS reads e.g. memory: 64Mi/100Mi.
func TestMemoryAverageValueInBinaryUnits(t *testing.T) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{Metrics: []autoscalingv2.MetricSpec{
		{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("100Mi"))}}},
	}}}
	mi := int64(64<<20) * 1000
	got, _ := reconcileOnce(t, hpa, []*corev1.Pod{pod("p0", corev1.PodRunning, corev1.ConditionTrue), pod("p1", corev1.PodRunning, corev1.ConditionTrue)},
		fixedMetrics{corev1.ResourceMemory: {"p0": sample(mi), "p1": sample(mi)}})
	if len(got.Status.CurrentMetrics) != 1 || got.Status.CurrentMetrics[0].Resource.Current.AverageValue.String() != "64Mi" {
		t.Errorf("current metrics: %+v", got.Status.CurrentMetrics)
	}
}

// A target of a kind the API does not serve: FailedGetScale carries the mapper's error as
// it is, as kube-controller-manager's reconcileAutoscaler records it.
func TestUnknownTargetKind(t *testing.T) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{Metrics: []autoscalingv2.MetricSpec{cpuUtilization(50)}}}
	got, events := reconcileOnce(t, hpa, nil, nil, "Widget")
	want := `no matches for apps/, Resource=Widget` // the test's mapper's words
	if c := condition(got, autoscalingv2.AbleToScale); c.Reason != "FailedGetScale" || c.Message != "the HPA controller was unable to get the target's current scale: "+want {
		t.Errorf("AbleToScale: %+v", c)
	}
	if len(events) != 1 || events[0] != "Warning FailedGetScale "+want {
		t.Errorf("events: %q", events)
	}
}

// A fresh autoscaler remembers the target's current replicas as its first recommendation
// (kube's recordInitialRecommendation, called by reconcileAutoscaler right after getting
// the scale), so idle pods do not scale the target down before the downscale stabilization
// window has passed: AbleToScale says ScaleDownStabilized and the target keeps 2 replicas.
func TestFreshAutoscalerStabilizesFirstDownscale(t *testing.T) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{Metrics: []autoscalingv2.MetricSpec{cpuUtilization(50)}}}
	got, events := reconcileOnce(t, hpa, []*corev1.Pod{pod("p0", corev1.PodRunning, corev1.ConditionTrue), pod("p1", corev1.PodRunning, corev1.ConditionTrue)},
		fixedMetrics{corev1.ResourceCPU: {"p0": sample(0), "p1": sample(0)}})
	if c := condition(got, autoscalingv2.AbleToScale); c.Reason != "ScaleDownStabilized" {
		t.Errorf("AbleToScale: %+v", c)
	}
	if got.Status.DesiredReplicas != 2 {
		t.Errorf("desiredReplicas %d, want 2", got.Status.DesiredReplicas)
	}
	for _, e := range events {
		if strings.Contains(e, "SuccessfulRescale") {
			t.Errorf("rescaled on the first reconcile: %s", e)
		}
	}
}
