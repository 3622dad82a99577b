// Package seats bounds how many requests are served at once and queues the ones that find
// every seat taken, fairly between clients, as kube-apiserver's API Priority and Fairness
// does within one priority level: a short burst waits its turn instead of being refused,
// a client that floods the server waits behind its own requests, not in front of others',
// and a request refused after waiting too long gets 429 from the caller.
//
// Where Kubernetes deals each flow a hand of queues (shuffle sharding) and dispatches by
// virtual finish time, a pool keeps one queue per flow (a user) and dispatches round robin:
// the same fairness between flows of equal cost, which is what requests of one kind are.
package seats

import (
	"context"
	"errors"
	"sync"
	"time"
)

const (
	// FlowQueueLimit is how many requests one flow may have waiting: kube-apiserver's
	// workload levels deal a flow a hand of 6 queues of at most 50 requests each.
	FlowQueueLimit = 6 * 50
	// TotalQueueLimit bounds the requests waiting in a pool, whatever the flows:
	// kube-apiserver's levels have 128 queues of 50.
	TotalQueueLimit = 128 * 50
	// DefaultWaitLimit is how long a request without a deadline may wait; one with a
	// deadline waits at most a quarter of the time it has left, as in kube-apiserver.
	DefaultWaitLimit = 15 * time.Second
)

// ErrQueueFull refuses a request that would make its flow's queue, or the pool's, too long.
var ErrQueueFull = errors.New("too many requests waiting")

// ErrWaitedTooLong refuses a request that waited its whole wait limit for a seat.
var ErrWaitedTooLong = errors.New("waited too long for a seat")

// Pool is a number of seats with a queue per flow for the requests waiting for one.
type Pool struct {
	mu      sync.Mutex
	seats   int
	free    int
	flows   map[string]*queue
	ring    []*queue // the flows with waiting requests, in dispatch order
	next    int      // the ring's next flow to get a seat
	waiting int
	now     func() time.Time
}

type queue struct {
	flow    string
	waiters []chan struct{} // closed when the waiter is given a seat
}

// New is a pool of n seats.
func New(n int) *Pool {
	return &Pool{seats: n, free: n, flows: map[string]*queue{}, now: time.Now}
}

// Acquire takes a seat for a request of flow, waiting in flow's queue while none is free,
// until the wait limit or ctx ends. The returned release gives the seat back.
func (p *Pool) Acquire(ctx context.Context, flow string) (release func(), err error) {
	p.mu.Lock()
	if p.free > 0 { // then nobody waits: a seat given back goes to a waiter first
		p.free--
		p.mu.Unlock()
		return p.release, nil
	}
	q := p.flows[flow]
	if p.waiting >= TotalQueueLimit || (q != nil && len(q.waiters) >= FlowQueueLimit) {
		p.mu.Unlock()
		return nil, ErrQueueFull
	}
	if q == nil {
		q = &queue{flow: flow}
		p.flows[flow] = q
		p.ring = append(p.ring, q)
	}
	seated := make(chan struct{})
	q.waiters = append(q.waiters, seated)
	p.waiting++
	p.mu.Unlock()

	timer := time.NewTimer(p.waitLimit(ctx))
	defer timer.Stop()
	select {
	case <-seated:
		return p.release, nil
	case <-timer.C:
		err = ErrWaitedTooLong
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leave(q, seated) { // given a seat as it gave up: it is served after all
		return p.release, nil
	}
	return nil, err
}

// waitLimit is how long a request may wait for a seat: a quarter of what its deadline
// leaves it, or DefaultWaitLimit.
func (p *Pool) waitLimit(ctx context.Context) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return deadline.Sub(p.now()) / 4
	}
	return DefaultWaitLimit
}

// release gives a seat to the next flow's oldest waiter, or frees it.
func (p *Pool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ring) == 0 {
		p.free++
		return
	}
	i := p.next % len(p.ring)
	q := p.ring[i]
	seated := q.waiters[0]
	q.waiters = q.waiters[1:]
	p.waiting--
	if len(q.waiters) == 0 {
		p.drop(i)
	} else {
		p.next = i + 1
	}
	close(seated)
}

// leave takes seated out of q, if it is still waiting there.
func (p *Pool) leave(q *queue, seated chan struct{}) bool {
	for i, w := range q.waiters {
		if w != seated {
			continue
		}
		q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
		p.waiting--
		if len(q.waiters) == 0 {
			for j, r := range p.ring {
				if r == q {
					p.drop(j)
					break
				}
			}
		}
		return true
	}
	return false
}

// drop takes the empty queue at ring position i out of the ring, keeping the round robin's
// place: the flow after it is next.
func (p *Pool) drop(i int) {
	delete(p.flows, p.ring[i].flow)
	p.ring = append(p.ring[:i], p.ring[i+1:]...)
	if p.next > i {
		p.next--
	}
}

// Serving is how many seats are taken.
func (p *Pool) Serving() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seats - p.free
}

// Waiting is how many requests wait for a seat.
func (p *Pool) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}
