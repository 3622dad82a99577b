// Package podworkers runs one goroutine per pod, like the kubelet's pod workers: updates
// for a pod coalesce, its goroutine always works on the newest version, a pod is never
// worked on twice at once, a pod is synced again 60 to 90 s after a sync that worked and
// 10 to 15 s after one that failed.
package podworkers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// A failing sync runs again errorRetryPeriod later, plus up to half of it at random, each
// time: the kubelet's pod workers' backOffPeriod and workerBackOffPeriodJitterFactor. So a
// pod waiting for a ConfigMap or Secret starts within 15 s of its creation, as there.
// A sync that worked runs again resyncPeriod later, plus up to half of it: the kubelet's
// resyncInterval (--sync-frequency, 1 min) and workerResyncIntervalJitterFactor.
const (
	errorRetryPeriod = 10 * time.Second
	errorRetryJitter = 0.5
	resyncPeriod     = time.Minute
	resyncJitter     = 0.5
)

// Handler does the work for one pod, keeping what it knows of the pod in a state of
// type S (made by Workers' newState when the pod's worker starts); Workers calls it from
// that pod's goroutine only.
type Handler[S any] interface {
	// SyncPod converges a pod that should run; a positive duration asks to be called
	// again after it (a back-off ending).
	SyncPod(ctx context.Context, st S, pod *corev1.Pod) (time.Duration, error)
	// TerminatePod stops and removes everything of a pod being deleted (gone: the API
	// object no longer exists).
	TerminatePod(ctx context.Context, st S, pod *corev1.Pod, gone bool) error
}

// Observer hears of every sync ("sync" or "terminate"), for metrics.
type Observer func(operation string, start time.Time, err error)

// Workers are the pods' workers.
type Workers[S any] struct {
	clock    clock.WithTicker
	log      *slog.Logger
	handler  Handler[S]
	observe  Observer
	newState func(*corev1.Pod) S

	mu      sync.Mutex
	stopped bool // Run has ended: no worker starts any more
	workers map[types.UID]*podWorker
	// finished remembers when pods were torn down for good, so a late update
	// (an informer event or a resync racing the deletion) cannot start them again.
	finished map[types.UID]time.Time
	wg       sync.WaitGroup
}

type podWorker struct {
	wake   chan struct{}
	cancel context.CancelFunc // ends the worker's syncs and the worker
	// guarded by podWorkers.mu
	pod  *corev1.Pod
	gone bool
	// terminating is the pod a TerminatePod under way works with (nil: none), and
	// cutShort ends that sync: a newer pod with a shorter grace period cuts it short.
	terminating *corev1.Pod
	cutShort    context.CancelFunc
}

// shortensGrace reports whether pod was deleted with a shorter grace period than old, the
// pod a termination works with; the API server only ever shortens it.
func shortensGrace(old, pod *corev1.Pod) bool {
	was, now := old.DeletionGracePeriodSeconds, pod.DeletionGracePeriodSeconds
	return now != nil && (was == nil || *now < *was)
}

// New starts no worker yet; each pod's starts at its first Update and runs until Run's
// context ends or the pod is gone. Failed syncs are logged to log.
func New[S any](clk clock.WithTicker, h Handler[S], observe Observer, newState func(*corev1.Pod) S, log *slog.Logger) *Workers[S] {
	return &Workers[S]{clock: clk, log: log, handler: h, observe: observe, newState: newState,
		workers: map[types.UID]*podWorker{}, finished: map[types.UID]time.Time{}}
}

// Run waits until ctx ends, then stops every worker (ending the syncs under way) and
// waits for them.
func (p *Workers[S]) Run(ctx context.Context) {
	<-ctx.Done()
	p.mu.Lock()
	p.stopped = true
	for _, w := range p.workers {
		w.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Update hands the newest version of a pod to its worker, starting one for a new pod.
func (p *Workers[S]) Update(pod *corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, done := p.finished[pod.UID]; done || p.stopped {
		return
	}
	w, ok := p.workers[pod.UID]
	if !ok {
		// A worker's context is its own, not the caller's: it outlives the event that
		// started it and ends at Run's end.
		ctx, cancel := context.WithCancel(context.Background())
		w = &podWorker{wake: make(chan struct{}, 1), cancel: cancel}
		p.workers[pod.UID] = w
		st := p.newState(pod)
		p.wg.Go(func() { p.run(ctx, pod.UID, w, st) })
	}
	if !w.gone {
		w.pod = pod
		// As the kubelet's pod workers: a shorter grace period cancels the termination
		// under way, which starts again with it.
		if w.terminating != nil && shortensGrace(w.terminating, pod) {
			w.cutShort()
		}
	}
	poke(w.wake)
}

// Reconcile hands a pod's worker the newest version of a pod whose status alone changed,
// without a sync: the next one (its timer, its containers' changes) writes the status
// against it. It reports false when the pod has no worker (nothing stored).
func (p *Workers[S]) Reconcile(pod *corev1.Pod) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.workers[pod.UID]
	if ok && !w.gone {
		w.pod = pod
	}
	return ok
}

// Remove tells a pod's worker that the API object is gone (or the static pod's file); the
// worker tears the pod down and exits.
func (p *Workers[S]) Remove(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.workers[uid]; ok {
		// Gone from the API while terminating: the API server cut its grace period to
		// 0 (a forced deletion), so the termination under way ends and starts again.
		if !w.gone && w.terminating != nil {
			w.cutShort()
		}
		w.gone = true
		poke(w.wake)
	}
}

// Wake asks a pod's worker for a sync without new pod data (its containers changed).
func (p *Workers[S]) Wake(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.workers[uid]; ok {
		poke(w.wake)
	}
}

// Known reports whether the pod has, or had, a worker.
func (p *Workers[S]) Known(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, running := p.workers[uid]
	_, finished := p.finished[uid]
	return running || finished
}

// UIDs lists the pods that have a worker.
func (p *Workers[S]) UIDs() map[types.UID]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[types.UID]bool, len(p.workers))
	for uid := range p.workers {
		out[uid] = true
	}
	return out
}

func (p *Workers[S]) run(ctx context.Context, uid types.UID, w *podWorker, st S) {
	defer w.cancel()
	timer := p.clock.NewTimer(time.Hour)
	timer.Stop() // armed only when a sync asks to be repeated
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-timer.C():
		}
		p.mu.Lock()
		pod, gone := w.pod, w.gone
		p.mu.Unlock()

		var after time.Duration
		var err error
		start := p.clock.Now()
		if gone || pod.DeletionTimestamp != nil {
			syncCtx, cutShort := context.WithCancel(ctx)
			p.mu.Lock()
			w.terminating, w.cutShort = pod, cutShort
			p.mu.Unlock()
			err = p.handler.TerminatePod(syncCtx, st, pod, gone)
			p.mu.Lock()
			w.terminating, w.cutShort = nil, nil
			p.mu.Unlock()
			cutShort()
			p.observe("terminate", start, err)
			if err == nil && gone {
				p.retire(uid)
				return
			}
			if err != nil && syncCtx.Err() != nil && ctx.Err() == nil {
				continue // cut short by a shorter grace period: its update woke us already
			}
		} else {
			after, err = p.handler.SyncPod(ctx, st, pod)
			p.observe("sync", start, err)
		}
		timer.Stop()
		if next := p.next(after, err, gone || pod.DeletionTimestamp != nil); next > 0 && ctx.Err() == nil {
			if err != nil {
				p.log.Error("sync pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			}
			timer.Reset(next)
		}
	}
}

// next is when a pod is synced again by itself, as the kubelet's completeWork requeues it:
// 10 to 15 s after a failed sync, 60 to 90 s after one that worked, or sooner when the
// sync asked for it (after: a back-off or the active deadline ending). A termination that
// worked is not repeated: the pod's deletion from the API comes next.
func (p *Workers[S]) next(after time.Duration, err error, terminating bool) time.Duration {
	var next time.Duration
	switch {
	case err != nil:
		next = wait.Jitter(errorRetryPeriod, errorRetryJitter)
	case !terminating:
		next = wait.Jitter(resyncPeriod, resyncJitter)
	}
	if after > 0 && (next == 0 || after < next) {
		next = after
	}
	return next
}

// retire forgets the worker of a pod that is gone for good (UIDs are never reused).
func (p *Workers[S]) retire(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.workers, uid)
	p.finished[uid] = p.clock.Now()
}

// ForgetFinished drops the memory of pods finished before cutoff; by then no
// stale event about them is in flight.
func (p *Workers[S]) ForgetFinished(cutoff time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid, at := range p.finished {
		if at.Before(cutoff) {
			delete(p.finished, uid)
		}
	}
}

// poke wakes a worker without blocking; a pending wake-up already covers this one.
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
