// Package queue is the scheduler's scheduling queue, as kube-scheduler's: activeQ (pods to
// schedule, highest priority first, then oldest), backoffQ (pods that failed, waiting
// 1s doubling to 10s), unschedulable pods (waiting for a cluster event one of the plugins
// that rejected them registered for, or 5 minutes), and gated pods (schedulingGates).
package queue

import (
	"context"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// Defaults of kube-scheduler.
const (
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 10 * time.Second
	// maxInUnschedulable: an unschedulable pod is retried after this long even without an
	// event (kube-scheduler's podMaxInUnschedulablePodsDuration).
	maxInUnschedulable = 5 * time.Minute
)

// QueuedPodInfo is a pod in the queue with its scheduling history.
type QueuedPodInfo struct {
	*framework.PodInfo
	key string
	// Timestamp is when the pod last entered the queue; InitialAttempt when it first did.
	Timestamp, InitialAttempt time.Time
	Attempts                  int
	// UnschedulablePlugins rejected the pod in its last cycle.
	UnschedulablePlugins map[string]bool
	backoffUntil         time.Time
}

// Key is namespace/name.
func Key(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// Queue is the scheduling queue.
type Queue struct {
	mu             sync.Mutex
	cond           *sync.Cond
	active         *podHeap
	backoff        *podHeap
	unschedulable  map[string]*QueuedPodInfo
	gated          map[string]*QueuedPodInfo
	inFlight       map[string]*corev1.Pod
	initialBackoff time.Duration
	maxBackoff     time.Duration
	// events maps a plugin to the events after which a pod it rejected may fit.
	events map[string][]framework.ClusterEvent
	// cycle counts pops; moveCycle is the cycle of the last move request, so a pod that
	// failed while an event arrived is retried instead of parked.
	cycle, moveCycle int64
	closed           bool
	now              func() time.Time
}

// New makes a queue; events maps each plugin to its EventsToRegister.
func New(events map[string][]framework.ClusterEvent, initialBackoff, maxBackoff time.Duration) *Queue {
	q := &Queue{
		active: newHeap(func(a, b *QueuedPodInfo) bool {
			pa, pb := corev1helpers.PodPriority(a.Pod), corev1helpers.PodPriority(b.Pod)
			return pa > pb || (pa == pb && a.Timestamp.Before(b.Timestamp))
		}),
		backoff:        newHeap(func(a, b *QueuedPodInfo) bool { return a.backoffUntil.Before(b.backoffUntil) }),
		unschedulable:  map[string]*QueuedPodInfo{},
		gated:          map[string]*QueuedPodInfo{},
		inFlight:       map[string]*corev1.Pod{},
		initialBackoff: initialBackoff,
		maxBackoff:     maxBackoff,
		events:         events,
		now:            time.Now,
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Run moves pods whose back-off ended to activeQ every second and pods unschedulable for
// too long every 30 seconds, until ctx ends; then it closes the queue.
func (q *Queue) Run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			q.mu.Lock()
			q.closed = true
			q.cond.Broadcast()
			q.mu.Unlock()
			return
		case <-tick.C:
			q.flushBackoff()
			if i%30 == 0 {
				q.flushUnschedulableLeftover()
			}
		}
	}
}

func (q *Queue) newInfo(pod *corev1.Pod) *QueuedPodInfo {
	now := q.now()
	return &QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), key: Key(pod), Timestamp: now, InitialAttempt: now}
}

// Add queues a new pending pod.
func (q *Queue) Add(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := Key(pod)
	if q.has(key) {
		q.updateLocked(pod)
		return
	}
	q.enqueue(q.newInfo(pod))
}

// enqueue puts a pod in activeQ, or among the gated while it has scheduling gates.
func (q *Queue) enqueue(qp *QueuedPodInfo) {
	if len(qp.Pod.Spec.SchedulingGates) > 0 {
		q.gated[qp.key] = qp
		return
	}
	q.active.add(qp)
	q.cond.Broadcast()
}

func (q *Queue) has(key string) bool {
	_, inU := q.unschedulable[key]
	_, inG := q.gated[key]
	_, inF := q.inFlight[key]
	return inU || inG || inF || q.active.get(key) != nil || q.backoff.get(key) != nil
}

// Update replaces a pending pod; a pod parked as unschedulable or gated whose spec or
// labels changed is tried again.
func (q *Queue) Update(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.updateLocked(pod)
}

func (q *Queue) updateLocked(pod *corev1.Pod) {
	key := Key(pod)
	if _, ok := q.inFlight[key]; ok {
		q.inFlight[key] = pod
		return
	}
	if qp := q.active.get(key); qp != nil {
		qp.PodInfo = framework.NewPodInfo(pod)
		q.active.add(qp)
		return
	}
	if qp := q.backoff.get(key); qp != nil {
		qp.PodInfo = framework.NewPodInfo(pod)
		return
	}
	if qp, ok := q.gated[key]; ok {
		delete(q.gated, key)
		qp.PodInfo = framework.NewPodInfo(pod)
		q.enqueue(qp)
		return
	}
	if qp, ok := q.unschedulable[key]; ok {
		changed := !equality.Semantic.DeepEqual(qp.Pod.Spec, pod.Spec) || !equality.Semantic.DeepEqual(qp.Pod.Labels, pod.Labels)
		qp.PodInfo = framework.NewPodInfo(pod)
		if changed {
			delete(q.unschedulable, key)
			q.requeue(qp)
		}
		return
	}
	q.enqueue(q.newInfo(pod))
}

// Delete drops a pod that was deleted, bound elsewhere or handed to another scheduler.
func (q *Queue) Delete(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := Key(pod)
	q.active.remove(key)
	q.backoff.remove(key)
	delete(q.unschedulable, key)
	delete(q.gated, key)
	delete(q.inFlight, key)
}

// Pop blocks until a pod is active (nil once the queue is closed) and marks it in flight.
func (q *Queue) Pop() *QueuedPodInfo {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil
	}
	qp := q.active.pop()
	qp.Attempts++
	q.cycle++
	q.inFlight[qp.key] = qp.Pod
	return qp
}

// SchedulingCycle is the number of pops so far.
func (q *Queue) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.cycle
}

// Done ends a pod's cycle that did not send it back to the queue (it was assumed).
func (q *Queue) Done(pod *corev1.Pod) {
	q.mu.Lock()
	delete(q.inFlight, Key(pod))
	q.mu.Unlock()
}

// AddUnschedulable takes back a pod whose cycle (numbered cycle) failed: to backoffQ when
// it failed on an error or a move request came meanwhile, else among the unschedulable.
func (q *Queue) AddUnschedulable(qp *QueuedPodInfo, cycle int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	latest, inFlight := q.inFlight[qp.key]
	if !inFlight {
		return // deleted meanwhile
	}
	delete(q.inFlight, qp.key)
	updated := latest != qp.Pod
	if updated {
		qp.PodInfo = framework.NewPodInfo(latest)
	}
	qp.Timestamp = q.now()
	qp.backoffUntil = qp.Timestamp.Add(q.backoffFor(qp.Attempts))
	if len(qp.UnschedulablePlugins) == 0 || q.moveCycle >= cycle || updated {
		q.backoff.add(qp)
		return
	}
	q.unschedulable[qp.key] = qp
}

// backoffFor is initial * 2^(attempts-1), at most max.
func (q *Queue) backoffFor(attempts int) time.Duration {
	d := q.initialBackoff
	for i := 1; i < attempts && d < q.maxBackoff; i++ {
		d *= 2
	}
	return min(d, q.maxBackoff)
}

// requeue sends a pod to backoffQ while its back-off lasts, else to activeQ.
func (q *Queue) requeue(qp *QueuedPodInfo) {
	if q.now().Before(qp.backoffUntil) {
		q.backoff.add(qp)
		return
	}
	q.active.add(qp)
	q.cond.Broadcast()
}

// MoveOnEvent retries the unschedulable pods the event may help: those rejected by a
// plugin that registered for it (or by nothing in particular), and for which match, when
// given, is true.
func (q *Queue) MoveOnEvent(ev framework.ClusterEvent, match func(*corev1.Pod) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moveCycle = q.cycle
	for key, qp := range q.unschedulable {
		if !q.interested(qp, ev) || (match != nil && !match(qp.Pod)) {
			continue
		}
		delete(q.unschedulable, key)
		q.requeue(qp)
	}
}

func (q *Queue) interested(qp *QueuedPodInfo, ev framework.ClusterEvent) bool {
	if len(qp.UnschedulablePlugins) == 0 {
		return true
	}
	for plugin := range qp.UnschedulablePlugins {
		for _, reg := range q.events[plugin] {
			if reg.Matches(ev) {
				return true
			}
		}
	}
	return false
}

func (q *Queue) flushBackoff() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	for qp := q.backoff.peek(); qp != nil && !now.Before(qp.backoffUntil); qp = q.backoff.peek() {
		q.active.add(q.backoff.pop())
		q.cond.Broadcast()
	}
}

func (q *Queue) flushUnschedulableLeftover() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	for key, qp := range q.unschedulable {
		if now.Sub(qp.Timestamp) > maxInUnschedulable {
			delete(q.unschedulable, key)
			q.requeue(qp)
		}
	}
}

// Lengths counts pending pods per queue, for the scheduler_pending_pods metric.
func (q *Queue) Lengths() map[string]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return map[string]int{"active": q.active.Len(), "backoff": q.backoff.Len(), "unschedulable": len(q.unschedulable), "gated": len(q.gated)}
}
