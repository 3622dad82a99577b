package podworkers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
)

// recordingHandler notes what the workers ask of it and fails when a pod is
// worked on twice at once.
type recordingHandler struct {
	t        *testing.T
	busy     sync.Map // uid -> struct{}
	syncs    atomic.Int32
	lastSeen atomic.Value // resourceVersion of the last synced pod
	failures atomic.Int32 // syncs to fail
	after    atomic.Int64 // the duration every sync asks to be called again after
	terminal chan string
}

func (r *recordingHandler) enter(pod *corev1.Pod) func() {
	if _, dup := r.busy.LoadOrStore(pod.UID, struct{}{}); dup {
		r.t.Errorf("pod %s synced twice at once", pod.Name)
	}
	time.Sleep(5 * time.Millisecond)
	return func() { r.busy.Delete(pod.UID) }
}

func (r *recordingHandler) SyncPod(_ context.Context, _ struct{}, pod *corev1.Pod) (time.Duration, error) {
	defer r.enter(pod)()
	r.syncs.Add(1)
	r.lastSeen.Store(pod.ResourceVersion)
	after := time.Duration(r.after.Load())
	if r.failures.Load() > 0 {
		r.failures.Add(-1)
		return after, errors.New("injected failure")
	}
	return after, nil
}

func (r *recordingHandler) TerminatePod(_ context.Context, _ struct{}, pod *corev1.Pod, gone bool) error {
	defer r.enter(pod)()
	if gone {
		r.terminal <- pod.Name
	}
	return nil
}

func TestPodWorkersSerialiseCoalesceAndRetire(t *testing.T) {
	h := &recordingHandler{t: t, terminal: make(chan string, 1)}
	w := New(clock.RealClock{}, h, func(string, time.Time, error) {}, func(*corev1.Pod) struct{} { return struct{}{} }, slog.Default())
	go w.Run(t.Context())
	pod := testPod("web")
	for i := range 50 {
		p := pod.DeepCopy()
		p.ResourceVersion = string(rune('a' + i%26))
		w.Update(p)
	}
	last := pod.DeepCopy()
	last.ResourceVersion = "final"
	w.Update(last)
	waitFor(t, "the newest version synced", func() bool { return h.lastSeen.Load() == "final" })
	if n := h.syncs.Load(); n >= 51 {
		t.Errorf("%d syncs for 51 updates; updates were not coalesced", n)
	}

	w.Remove(pod.UID)
	select {
	case name := <-h.terminal:
		if name != "web" {
			t.Errorf("terminated %s", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("removed pod not terminated")
	}
	waitFor(t, "worker retired", func() bool { return !w.UIDs()[pod.UID] })

	// A late update about the finished pod does not start it again.
	syncs := h.syncs.Load()
	w.Update(last)
	time.Sleep(50 * time.Millisecond)
	if w.UIDs()[pod.UID] || h.syncs.Load() != syncs {
		t.Error("a late update restarted a finished pod")
	}
}

// A failed sync runs again by itself 10 to 15 s later, each time (not doubling), as the
// kubelet's pod workers retry (backOffPeriod, jittered by half).
func TestPodWorkersRetryFailedSyncs(t *testing.T) {
	h := &recordingHandler{t: t, terminal: make(chan string, 1)}
	h.failures.Store(3)
	clk := clocktesting.NewFakeClock(time.Now())
	w := New(clk, h, func(string, time.Time, error) {}, func(*corev1.Pod) struct{} { return struct{}{} }, slog.Default())
	go w.Run(t.Context())
	w.Update(testPod("web"))
	waitFor(t, "the first sync", func() bool { return h.syncs.Load() == 1 })
	for n := int32(2); n <= 3; n++ {
		waitFor(t, "the retry's timer", clk.HasWaiters)
		clk.Step(errorRetryPeriod - time.Millisecond)
		time.Sleep(100 * time.Millisecond)
		if got := h.syncs.Load(); got != n-1 {
			t.Fatalf("sync %d ran before %v had passed", got, errorRetryPeriod)
		}
		clk.Step(errorRetryPeriod/2 + time.Millisecond)
		waitFor(t, fmt.Sprintf("retry %d within %v", n-1, errorRetryPeriod*3/2), func() bool { return h.syncs.Load() == n })
	}
}

// A pod is synced again by its worker alone, as the kubelet's completeWork requeues it: 60
// to 90 s after a sync that worked (resyncInterval, jittered by half), 10 to 15 s after
// one that failed, or at the duration a sync asked for (a back-off ending) when sooner.
func TestPodWorkersResyncSchedule(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fail     bool
		after    time.Duration
		min, max time.Duration // the next sync comes no sooner than min, by max
	}{
		{name: "success", min: resyncPeriod, max: resyncPeriod * 3 / 2},
		{name: "error", fail: true, min: errorRetryPeriod, max: errorRetryPeriod * 3 / 2},
		{name: "success asking sooner", after: 5 * time.Second, min: 5 * time.Second, max: 5 * time.Second},
		{name: "error asking sooner", fail: true, after: 3 * time.Second, min: 3 * time.Second, max: 3 * time.Second},
		{name: "success asking later", after: 5 * time.Minute, min: resyncPeriod, max: resyncPeriod * 3 / 2},
		{name: "error asking later", fail: true, after: 5 * time.Minute, min: errorRetryPeriod, max: errorRetryPeriod * 3 / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &recordingHandler{t: t, terminal: make(chan string, 1)}
			h.after.Store(int64(tc.after))
			if tc.fail {
				h.failures.Store(1)
			}
			clk := clocktesting.NewFakeClock(time.Now())
			w := New(clk, h, func(string, time.Time, error) {}, func(*corev1.Pod) struct{} { return struct{}{} }, slog.Default())
			go w.Run(t.Context())
			w.Update(testPod("web"))
			waitFor(t, "the first sync", func() bool { return h.syncs.Load() == 1 })
			waitFor(t, "the next sync's timer", clk.HasWaiters)
			// The fake clock fires a due timer within Step and forgets it: one still
			// waiting has not fired.
			clk.Step(tc.min - time.Millisecond)
			if !clk.HasWaiters() || h.syncs.Load() != 1 {
				t.Fatalf("synced again before %v", tc.min)
			}
			clk.Step(tc.max - tc.min + time.Millisecond)
			waitFor(t, fmt.Sprintf("the next sync by %v", tc.max), func() bool { return h.syncs.Load() == 2 })
		})
	}
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
}

// waitFor polls cond until it holds, failing t after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	controllertest.Until(t, what, 10*time.Second, cond)
}

// graceHandler's TerminatePod "waits out" the pod's grace period: it returns when its
// context ends (then with its error) or when release is closed.
type graceHandler struct {
	terminations chan int64 // the deletionGracePeriodSeconds of each TerminatePod
	release      chan struct{}
}

func (g *graceHandler) SyncPod(context.Context, struct{}, *corev1.Pod) (time.Duration, error) {
	return 0, nil
}

func (g *graceHandler) TerminatePod(ctx context.Context, _ struct{}, pod *corev1.Pod, gone bool) error {
	if gone {
		g.terminations <- -1
	} else {
		g.terminations <- *pod.DeletionGracePeriodSeconds
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-g.release:
		return nil
	}
}

// A pod deleted again with a shorter grace period while it terminates (kubectl delete
// --grace-period=3 after 60, or --force) has its termination cut short and started again
// with the new grace period, as the kubelet's pod workers cancel the sync under way when
// the grace period decreases; a longer one changes nothing.
func TestPodWorkersShortenedGracePeriodRestartsTermination(t *testing.T) {
	g := &graceHandler{terminations: make(chan int64, 10), release: make(chan struct{})}
	w := New(clock.RealClock{}, g, func(string, time.Time, error) {}, func(*corev1.Pod) struct{} { return struct{}{} }, slog.Default())
	go w.Run(t.Context())
	deleted := func(grace int64) *corev1.Pod {
		p := testPod("web")
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		p.DeletionGracePeriodSeconds = &grace
		return p
	}
	next := func(what string) int64 {
		t.Helper()
		select {
		case grace := <-g.terminations:
			return grace
		case <-time.After(10 * time.Second):
			t.Fatalf("no termination %s", what)
			return 0
		}
	}
	w.Update(deleted(60))
	if grace := next("at the deletion"); grace != 60 {
		t.Fatalf("terminating with grace %d, want 60", grace)
	}
	w.Update(deleted(90))
	select {
	case grace := <-g.terminations:
		t.Fatalf("a longer grace period (%d) restarted the termination", grace)
	case <-time.After(200 * time.Millisecond):
	}
	w.Update(deleted(3))
	if grace := next("after the grace period was shortened"); grace != 3 {
		t.Errorf("terminating again with grace %d, want 3", grace)
	}
	// Gone from the API (kubectl delete --force: the API server cut the grace period to
	// 0): cut short again, the pod is torn down as gone.
	w.Remove(types.UID("uid-web"))
	if grace := next("after the pod was removed"); grace != -1 {
		t.Errorf("terminating again with grace %d, want the pod gone", grace)
	}
	close(g.release)
}

// blockingHandler's syncs tell which version of the pod they work on, then wait for
// release.
type blockingHandler struct {
	started chan string // the resourceVersion of each sync's pod
	release chan struct{}
}

func (b *blockingHandler) SyncPod(_ context.Context, _ struct{}, pod *corev1.Pod) (time.Duration, error) {
	b.started <- pod.ResourceVersion
	<-b.release
	return 0, nil
}

func (b *blockingHandler) TerminatePod(context.Context, struct{}, *corev1.Pod, bool) error {
	return nil
}

// A pod whose status alone changed reaches its worker without asking for a sync (the
// kubelet's HandlePodReconcile updates its pod manager only): the next sync works on it.
func TestPodWorkersReconcileStoresWithoutSync(t *testing.T) {
	b := &blockingHandler{started: make(chan string, 1), release: make(chan struct{})}
	w := New(clock.RealClock{}, b, func(string, time.Time, error) {}, func(*corev1.Pod) struct{} { return struct{}{} }, slog.Default())
	go w.Run(t.Context())
	defer close(b.release)
	pod := testPod("web")
	pod.ResourceVersion = "1"
	w.Update(pod)
	if rv := <-b.started; rv != "1" {
		t.Fatalf("first sync of version %s", rv)
	}

	newer := pod.DeepCopy()
	newer.ResourceVersion = "2"
	if !w.Reconcile(newer) {
		t.Fatal("Reconcile found no worker for a running pod")
	}
	w.mu.Lock()
	pending := len(w.workers[pod.UID].wake)
	w.mu.Unlock()
	if pending != 0 {
		t.Error("Reconcile asked for a sync")
	}
	w.Wake(pod.UID)
	b.release <- struct{}{}
	if rv := <-b.started; rv != "2" {
		t.Errorf("the sync after a reconcile worked on version %s, want 2", rv)
	}
	if w.Reconcile(testPod("other")) || w.UIDs()[testPod("other").UID] {
		t.Error("Reconcile of a pod without a worker started one")
	}
}
