package podready

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func readyAt(at time.Time) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}}}
}

func TestAvailable(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	notReady := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		minReady int32
		want     bool
	}{
		{"not ready", notReady, 0, false},
		{"no conditions", &corev1.Pod{}, 0, false},
		{"ready, no minReadySeconds", readyAt(now), 0, true},
		{"ready 5s of 10", readyAt(now.Add(-5 * time.Second)), 10, false},
		{"ready exactly 10s of 10", readyAt(now.Add(-10 * time.Second)), 10, true},
		{"ready with no time, minReadySeconds set", readyAt(time.Time{}), 10, false},
	} {
		if got := Available(tc.pod, tc.minReady, now); got != tc.want {
			t.Errorf("%s: Available = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNextAvailable(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	pods := []*corev1.Pod{readyAt(now.Add(-2 * time.Second)), readyAt(now.Add(-7 * time.Second)), readyAt(now.Add(-20 * time.Second)), {}}
	if got := NextAvailable(slices.Values(pods), 10, now); got != 3*time.Second {
		t.Errorf("NextAvailable = %v, want 3s (the pod ready 7s ago)", got)
	}
	if got := NextAvailable(slices.Values(pods), 0, now); got != 0 {
		t.Errorf("NextAvailable without minReadySeconds = %v, want 0", got)
	}
	if got := NextAvailable(slices.Values(pods[2:]), 10, now); got != 0 {
		t.Errorf("NextAvailable with every ready pod available = %v, want 0", got)
	}
}
