package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// recordingHandler notes what the workers ask of it and fails when a pod is
// worked on twice at once.
type recordingHandler struct {
	t        *testing.T
	busy     sync.Map // uid -> struct{}
	syncs    atomic.Int32
	lastSeen atomic.Value // resourceVersion of the last synced pod
	failures atomic.Int32 // syncs to fail
	terminal chan string
}

func (r *recordingHandler) enter(pod *corev1.Pod) func() {
	if _, dup := r.busy.LoadOrStore(pod.UID, struct{}{}); dup {
		r.t.Errorf("pod %s synced twice at once", pod.Name)
	}
	time.Sleep(5 * time.Millisecond)
	return func() { r.busy.Delete(pod.UID) }
}

func (r *recordingHandler) syncPod(_ context.Context, _ *podState, pod *corev1.Pod) (time.Duration, error) {
	defer r.enter(pod)()
	r.syncs.Add(1)
	r.lastSeen.Store(pod.ResourceVersion)
	if r.failures.Load() > 0 {
		r.failures.Add(-1)
		return 0, errors.New("injected failure")
	}
	return 0, nil
}

func (r *recordingHandler) terminatePod(_ context.Context, _ *podState, pod *corev1.Pod, gone bool) error {
	defer r.enter(pod)()
	if gone {
		r.terminal <- pod.Name
	}
	return nil
}

func TestPodWorkersSerialiseCoalesceAndRetire(t *testing.T) {
	h := &recordingHandler{t: t, terminal: make(chan string, 1)}
	w := newPodWorkers(t.Context(), h, newMetrics(), func(p *corev1.Pod) *podState { return newPodState(p, metav1.Now()) })
	pod := testPod("web", corev1.RestartPolicyAlways, "app")
	for i := range 50 {
		p := pod.DeepCopy()
		p.ResourceVersion = string(rune('a' + i%26))
		w.update(p)
	}
	last := pod.DeepCopy()
	last.ResourceVersion = "final"
	w.update(last)
	waitFor(t, "the newest version synced", func() bool { return h.lastSeen.Load() == "final" })
	if n := h.syncs.Load(); n >= 51 {
		t.Errorf("%d syncs for 51 updates; updates were not coalesced", n)
	}

	w.remove(pod.UID)
	select {
	case name := <-h.terminal:
		if name != "web" {
			t.Errorf("terminated %s", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("removed pod not terminated")
	}
	waitFor(t, "worker retired", func() bool { return !w.uids()[pod.UID] })

	// A late update about the finished pod does not start it again.
	syncs := h.syncs.Load()
	w.update(last)
	time.Sleep(50 * time.Millisecond)
	if w.uids()[pod.UID] || h.syncs.Load() != syncs {
		t.Error("a late update restarted a finished pod")
	}
}

func TestPodWorkersRetryFailedSyncs(t *testing.T) {
	h := &recordingHandler{t: t, terminal: make(chan string, 1)}
	h.failures.Store(1)
	w := newPodWorkers(t.Context(), h, newMetrics(), func(p *corev1.Pod) *podState { return newPodState(p, metav1.Now()) })
	w.update(testPod("web", corev1.RestartPolicyAlways, "app"))
	// errorRetryMin later the failed sync runs again by itself.
	waitFor(t, "a retry", func() bool { return h.syncs.Load() >= 2 })
}
