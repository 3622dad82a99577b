package replicaset

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

// pod is a running, ready pod on node-a, created and ready an hour ago.
func pod(name string, change func(*corev1.Pod)) *corev1.Pod {
	hourAgo := metav1.NewTime(now.Add(-time.Hour))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: hourAgo},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: hourAgo}}},
	}
	if change != nil {
		change(p)
	}
	return p
}

func readyAgo(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-d)) }
}

func withRestarts(n int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	}
}

func withCost(cost string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.PodDeletionCost: cost} }
}

func both(a, b func(*corev1.Pod)) func(*corev1.Pod) {
	return func(p *corev1.Pod) { a(p); b(p) }
}

// Each case is a pair of pods that differ in one rule of kube's ActivePodsWithRanks; the
// first must be picked, whichever order they come in.
func TestPodsToDeleteRanksAsKubernetes(t *testing.T) {
	sidecar := func(restarts int32) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", RestartCount: restarts}}
		}
	}
	for _, tc := range []struct {
		name        string
		first, then *corev1.Pod
		related     []*corev1.Pod
	}{
		{"unassigned before assigned", pod("x", func(p *corev1.Pod) { p.Spec.NodeName = "" }), pod("y", nil), nil},
		{"pending before running", pod("x", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), pod("y", nil), nil},
		{"unknown before running", pod("x", func(p *corev1.Pod) { p.Status.Phase = corev1.PodUnknown }), pod("y", nil), nil},
		{"not ready before ready", pod("x", func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }), pod("y", withCost("-10")), nil},
		{"lower deletion cost first, though ready for longer and with fewer restarts",
			pod("x", both(withCost("-1"), readyAgo(10*time.Hour))), pod("y", both(readyAgo(time.Minute), withRestarts(9))), nil},
		{"an unreadable deletion cost counts as 0", pod("x", withCost("+5")), pod("y", withCost("1")), nil},
		{"doubled up with related pods before alone, though ready for longer",
			pod("x", readyAgo(10*time.Hour)), pod("y", func(p *corev1.Pod) { p.Spec.NodeName = "node-b"; readyAgo(time.Minute)(p) }),
			[]*corev1.Pod{pod("x", nil), pod("sibling", nil), pod("done-on-b", func(p *corev1.Pod) { p.Spec.NodeName = "node-b"; p.Status.Phase = corev1.PodSucceeded }),
				pod("going-on-b", func(p *corev1.Pod) { p.Spec.NodeName = "node-b"; p.DeletionTimestamp = &p.CreationTimestamp })}},
		{"ready for less time first, by the log2 of the time", pod("x", readyAgo(time.Minute)), pod("y", both(readyAgo(3*time.Minute), withRestarts(9))), nil},
		{"ready for about the same time: by UID, not by restarts", pod("a", readyAgo(70*time.Second)), pod("b", both(readyAgo(80*time.Second), withRestarts(9))), nil},
		{"more restarts first", pod("x", withRestarts(2)), pod("y", withRestarts(1)), nil},
		{"then more sidecar restarts", pod("x", sidecar(3)), pod("y", sidecar(0)), nil},
		{"then newer", pod("x", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute)) }), pod("y", nil), nil},
		{"then no creation time", pod("x", func(p *corev1.Pod) { p.CreationTimestamp = metav1.Time{} }), pod("y", nil), nil},
	} {
		for _, pods := range [][]*corev1.Pod{{tc.first, tc.then}, {tc.then, tc.first}} {
			if got := podsToDelete(pods, tc.related, 1, now); len(got) != 1 || got[0] != tc.first {
				t.Errorf("%s: picked %s, want %s", tc.name, got[0].Name, tc.first.Name)
			}
		}
	}
}

func TestPodsToDeleteTakesAllWhenAllGo(t *testing.T) {
	pods := []*corev1.Pod{pod("a", nil), pod("b", nil)}
	if got := podsToDelete(pods, nil, 2, now); len(got) != 2 {
		t.Errorf("picked %d of 2", len(got))
	}
}
