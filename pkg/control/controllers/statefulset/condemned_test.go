package statefulset

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCondemnedToDelete: ordered scale-down deletes the highest pod beyond replicas, one at
// a time, and halts while that pod is unhealthy unless it is the lowest unhealthy one, as
// kube's controller (the conformance test "Scaling should happen in predictable order and
// halt if any stateful pod is unhealthy" scales 3 unready pods to 0 and expects 3 to stay).
// Parallel deletes every one not yet terminating.
func TestCondemnedToDelete(t *testing.T) {
	ready := func() *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	unready := func() *corev1.Pod { return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}} }
	terminating := func() *corev1.Pod {
		p := ready()
		p.DeletionTimestamp = &metav1.Time{}
		return p
	}
	for _, tc := range []struct {
		name     string
		pods     map[int]*corev1.Pod
		start    int
		replicas int
		ordered  bool
		want     []int
	}{
		{"all ready: the highest", map[int]*corev1.Pod{0: ready(), 1: ready(), 2: ready()}, 0, 0, true, []int{2}},
		{"all unready: halt", map[int]*corev1.Pod{0: unready(), 1: unready(), 2: unready()}, 0, 0, true, nil},
		{"only the highest unready: it goes", map[int]*corev1.Pod{0: ready(), 1: ready(), 2: unready()}, 0, 1, true, []int{2}},
		{"a lower condemned one unready: the ready highest goes", map[int]*corev1.Pod{0: ready(), 1: unready(), 2: ready()}, 0, 1, true, []int{2}},
		{"the highest unready above another: halt", map[int]*corev1.Pod{0: ready(), 1: unready(), 2: unready()}, 0, 1, true, nil},
		{"the highest terminating: wait", map[int]*corev1.Pod{0: ready(), 1: ready(), 2: terminating()}, 0, 0, true, nil},
		{"none beyond replicas", map[int]*corev1.Pod{0: unready()}, 0, 1, true, nil},
		{"ordinals from 5: the highest below them", map[int]*corev1.Pod{0: ready(), 1: ready(), 5: ready(), 6: ready()}, 5, 2, true, []int{1}},
		{"ordinals from 5: the highest above them", map[int]*corev1.Pod{5: ready(), 6: ready(), 7: ready()}, 5, 2, true, []int{7}},
		{"parallel: all not terminating", map[int]*corev1.Pod{0: ready(), 1: unready(), 2: terminating(), 3: ready()}, 0, 0, false, []int{3, 1, 0}},
	} {
		if got := condemnedToDelete(tc.pods, tc.start, tc.replicas, tc.ordered, runningAndReady); !slices.Equal(got, tc.want) {
			t.Errorf("%s: deletes %v, want %v", tc.name, got, tc.want)
		}
	}
}
