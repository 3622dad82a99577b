package podautoscaler

import (
	"fmt"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// pod is a running pod requesting 100m CPU, ready since long before t0 unless phase says
// otherwise.
func pod(name string, phase corev1.PodPhase, ready corev1.ConditionStatus) *corev1.Pod {
	started := metav1.NewTime(t0.Add(-time.Hour))
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		Status: corev1.PodStatus{Phase: phase, StartTime: &started, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(t0.Add(-50 * time.Minute))}}}}
}

func sample(v int64) podMetric { return podMetric{value: v, timestamp: t0, window: 10 * time.Second} }

func calc() *calculator {
	return &calculator{tolerance: 0.1, cpuInitializationPeriod: 5 * time.Minute, initialReadinessDelay: 30 * time.Second, now: func() time.Time { return t0 }}
}

// The cases of kube-controller-manager's replica calculator that decide most outcomes.
func TestUtilizationReplicas(t *testing.T) {
	running := func(n int) []*corev1.Pod {
		var pods []*corev1.Pod
		for i := range n {
			pods = append(pods, pod(fmt.Sprintf("p%d", i), corev1.PodRunning, corev1.ConditionTrue))
		}
		return pods
	}
	for _, tc := range []struct {
		name        string
		current     int32
		pods        []*corev1.Pod
		metrics     podMetrics
		want        int32
		wantUtil    int32
		wantErrText string
	}{
		{name: "double the target doubles the replicas", current: 2, pods: running(2),
			metrics: podMetrics{"p0": sample(100), "p1": sample(100)}, want: 4, wantUtil: 100},
		{name: "within tolerance keeps the count", current: 2, pods: running(2),
			metrics: podMetrics{"p0": sample(52), "p1": sample(54)}, want: 2, wantUtil: 53},
		{name: "low usage scales down", current: 4, pods: running(4),
			metrics: podMetrics{"p0": sample(10), "p1": sample(10), "p2": sample(10), "p3": sample(10)}, want: 1, wantUtil: 10},
		// A pod without a sample counts as using its whole request when scaling down: 3 x 10m
		// and 100m over 4 x 100m is 32%, so 4 x 32/50 = 2.56 -> 3.
		{name: "missing sample is assumed busy when scaling down", current: 4, pods: running(4),
			metrics: podMetrics{"p0": sample(10), "p1": sample(10), "p2": sample(10)}, want: 3, wantUtil: 10},
		// ... and idle when scaling up: 2 x 100m + 0 over 300m is 66%: 3 x 66/50 = 3.96 -> 4.
		{name: "missing sample is assumed idle when scaling up", current: 3, pods: running(3),
			metrics: podMetrics{"p0": sample(100), "p1": sample(100)}, want: 4, wantUtil: 100},
		// A pending pod counts as idle when scaling up.
		{name: "pending pod is idle when scaling up", current: 3,
			pods:    append(running(2), pod("p2", corev1.PodPending, corev1.ConditionFalse)),
			metrics: podMetrics{"p0": sample(100), "p1": sample(100)}, want: 4, wantUtil: 100},
		{name: "deleted and failed pods are ignored", current: 2,
			pods:    append(running(2), pod("p2", corev1.PodFailed, corev1.ConditionFalse)),
			metrics: podMetrics{"p0": sample(100), "p1": sample(100), "p2": sample(500)}, want: 4, wantUtil: 100},
		{name: "no pods", current: 2, wantErrText: "no pods returned by selector while calculating replica count"},
		{name: "no samples", current: 2, pods: running(2), metrics: podMetrics{},
			wantErrText: "did not receive metrics for targeted pods (pods might be unready)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, util, _, err := calc().utilizationReplicas(tc.current, 50, tc.metrics, tc.pods, corev1.ResourceCPU, "")
			if tc.wantErrText != "" {
				if err == nil || err.Error() != tc.wantErrText {
					t.Fatalf("err %v, want %q", err, tc.wantErrText)
				}
				return
			}
			if err != nil || got != tc.want || util != tc.wantUtil {
				t.Errorf("replicas %d utilization %d (err %v), want %d and %d", got, util, err, tc.want, tc.wantUtil)
			}
		})
	}
}

func TestMissingRequestIsAnError(t *testing.T) {
	p := pod("p0", corev1.PodRunning, corev1.ConditionTrue)
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	_, _, _, err := calc().utilizationReplicas(1, 50, podMetrics{"p0": sample(10)}, []*corev1.Pod{p}, corev1.ResourceCPU, "")
	if err == nil || err.Error() != "missing request for cpu in container c of Pod p0" {
		t.Errorf("err %v", err)
	}
}

// A young pod's CPU sample counts only when taken a whole window after it became ready.
func TestYoungPodSampleWaitsForAWindowAfterReady(t *testing.T) {
	p := pod("p0", corev1.PodRunning, corev1.ConditionTrue)
	started := metav1.NewTime(t0.Add(-time.Minute))
	p.Status.StartTime = &started
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-5 * time.Second))
	if !calc().cpuUnready(p, sample(100)) {
		t.Error("sample 5 s after ready, window 10 s: should not count yet")
	}
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-30 * time.Second))
	if calc().cpuUnready(p, sample(100)) {
		t.Error("sample 30 s after ready: should count")
	}
}

func TestAverageValueReplicas(t *testing.T) {
	pods := []*corev1.Pod{pod("p0", corev1.PodRunning, corev1.ConditionTrue), pod("p1", corev1.PodRunning, corev1.ConditionTrue)}
	// memory: 300Mi average against a 100Mi target: 6 replicas.
	mi := int64(1 << 20 * 1000)
	got, avg, err := calc().averageValueReplicas(2, 100*mi, podMetrics{"p0": sample(200 * mi), "p1": sample(400 * mi)}, pods, corev1.ResourceMemory)
	if err != nil || got != 6 || avg != 300*mi {
		t.Errorf("replicas %d average %d (err %v), want 6 and %d", got, avg, err, 300*mi)
	}
}

func hpaWith(b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To[int32](1), MaxReplicas: 100, Behavior: b}}
}

// Without a behavior: scale-up at most doubles (or adds 4), scale-down waits for the
// highest recommendation of the window to pass.
func TestNormalizeWithoutBehavior(t *testing.T) {
	h := newHistory()
	hpa := hpaWith(nil)
	if l := h.normalize("k", hpa, 3, 20, 1, t0, 5*time.Minute); l.replicas != 6 || l.limitReason != "ScaleUpLimit" || !l.limited {
		t.Errorf("3 -> 20: %+v, want 6 limited by ScaleUpLimit", l)
	}
	// The window still holds the recommendation of 20 (as in kube-controller-manager, the
	// unbounded one): applied, then bounded by the scale-up limit of 2 x 6.
	if l := h.normalize("k", hpa, 6, 2, 1, t0.Add(time.Minute), 5*time.Minute); l.replicas != 12 || l.ableReason != "ScaleDownStabilized" {
		t.Errorf("stabilized scale-down: %+v, want 12, ScaleDownStabilized", l)
	}
	if l := h.normalize("k", hpa, 6, 2, 1, t0.Add(10*time.Minute), 5*time.Minute); l.replicas != 2 || l.ableReason != "ReadyForNewScale" {
		t.Errorf("after the window: %+v, want 2", l)
	}
	if l := h.normalize("k", hpa, 2, 0, 1, t0.Add(20*time.Minute), 0); l.replicas != 1 || l.limitReason != "TooFewReplicas" {
		t.Errorf("below min: %+v, want 1 TooFewReplicas", l)
	}
}

// With a behavior: the policies bound the change per period, counting the changes already
// made within it; Disabled stops scaling that way.
func TestNormalizeWithBehaviorPolicies(t *testing.T) {
	h := newHistory()
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}}},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.DisabledPolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}},
	}
	hpa := hpaWith(b)
	l := h.normalize("k", hpa, 2, 10, 1, t0, 0)
	if l.replicas != 4 || l.limitReason != "ScaleUpLimit" {
		t.Fatalf("2 -> 10 at 2 pods a minute: %+v, want 4", l)
	}
	h.recordScale("k", b, 2, 4, t0)
	if l := h.normalize("k", hpa, 4, 10, 1, t0.Add(30*time.Second), 0); l.replicas != 4 {
		t.Errorf("within the same minute: %+v, want still 4", l)
	}
	if l := h.normalize("k", hpa, 4, 10, 1, t0.Add(2*time.Minute), 0); l.replicas != 6 {
		t.Errorf("a minute later: %+v, want 6", l)
	}
	if l := h.normalize("k", hpa, 6, 1, 1, t0.Add(3*time.Minute), 0); l.replicas != 6 || l.limitReason != "ScaleDownLimit" {
		t.Errorf("scale-down disabled: %+v, want 6", l)
	}
}

// A behavior's scale-down window left unset (as the API server stores it, as kube's) is
// the controller's --horizontal-pod-autoscaler-downscale-stabilization.
func TestBehaviorWithoutScaleDownWindowUsesTheControllers(t *testing.T) {
	h := newHistory()
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 1000, PeriodSeconds: 15}}},
		ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}},
	}
	hpa := hpaWith(b)
	h.normalize("k", hpa, 2, 10, 1, t0, time.Minute)
	if l := h.normalize("k", hpa, 10, 2, 1, t0.Add(30*time.Second), time.Minute); l.replicas != 10 {
		t.Errorf("within the controller's minute: %+v, want still 10", l)
	}
	if l := h.normalize("k", hpa, 10, 2, 1, t0.Add(2*time.Minute), time.Minute); l.replicas != 2 {
		t.Errorf("after the controller's minute: %+v, want 2 (not the 5 minutes of a window written in)", l)
	}
}

// A sidecar (an init container that keeps running) counts in the pod's request, and a
// container the autoscaler names that the pod lacks is an error, as kube's
// calculatePodRequestsFromContainers has it.
func TestSidecarRequestsCount(t *testing.T) {
	p := pod("p0", corev1.PodRunning, corev1.ConditionTrue)
	p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}
	// 100m used of 200m requested is 50%.
	if _, util, _, err := calc().utilizationReplicas(1, 50, podMetrics{"p0": sample(100)}, []*corev1.Pod{p}, corev1.ResourceCPU, ""); err != nil || util != 50 {
		t.Errorf("utilization %d, err %v; want 50", util, err)
	}
	if _, _, _, err := calc().utilizationReplicas(1, 50, podMetrics{"p0": sample(100)}, []*corev1.Pod{p}, corev1.ResourceCPU, "other"); err == nil || err.Error() != "container other not found in Pod p0" {
		t.Errorf("err %v", err)
	}
}

// A pod with pod-level requests (spec.resources) is measured against them, as kube's
// calculatePodRequests with PodLevelResources (on by default since 1.34), unless the
// autoscaler names a container; a pod-level request lacking the resource is an error.
func TestPodLevelRequests(t *testing.T) {
	p := pod("p0", corev1.PodRunning, corev1.ConditionTrue)
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("400m")}}
	// 100m used of the pod's 400m is 25%; of the container's 100m, 100%.
	if _, util, _, err := calc().utilizationReplicas(1, 50, podMetrics{"p0": sample(100)}, []*corev1.Pod{p}, corev1.ResourceCPU, ""); err != nil || util != 25 {
		t.Errorf("utilization %d, err %v; want 25 (of the pod-level request)", util, err)
	}
	if _, util, _, err := calc().utilizationReplicas(1, 50, podMetrics{"p0": sample(100)}, []*corev1.Pod{p}, corev1.ResourceCPU, "c"); err != nil || util != 100 {
		t.Errorf("utilization of container c %d, err %v; want 100", util, err)
	}
	_, _, _, err := calc().utilizationReplicas(1, 50, podMetrics{"p0": sample(100)}, []*corev1.Pod{p}, corev1.ResourceMemory, "")
	if err == nil || err.Error() != "missing pod-level request for memory in Pod p0" {
		t.Errorf("memory without a pod-level memory request: err %v", err)
	}
}
