package job

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestIndexesRoundTrip(t *testing.T) {
	for in, want := range map[string]string{"": "", "0": "0", "0-4": "0-4", "0,1,2,4": "0-2,4", "3,1,7-8,x,9-z": "1,3,7,8", "0-1": "0,1", "5-12": "5-9"} {
		if got := formatIndexes(parseIndexes(in, 10)); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestBackoff(t *testing.T) {
	for failures, want := range map[int]time.Duration{0: 0, 1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 6: 320 * time.Second, 7: 6 * time.Minute, 40: 6 * time.Minute} {
		if got := backoff(failures); got != want {
			t.Errorf("backoff(%d) = %v, want %v", failures, got, want)
		}
	}
}

func TestFailurePolicyNotIn(t *testing.T) {
	policy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionCount,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{1, 2}}}}}
	pod := func(code int32) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "ok", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
			{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}}}}
	}
	if a, _ := matchFailurePolicy(policy, pod(3)); a == nil || *a != batchv1.PodFailurePolicyActionCount {
		t.Errorf("exit 3 NotIn [1 2]: %v", a)
	}
	if a, _ := matchFailurePolicy(policy, pod(2)); a != nil {
		t.Errorf("exit 2 NotIn [1 2] matched %v (and exit code 0 must never match)", *a)
	}
}
