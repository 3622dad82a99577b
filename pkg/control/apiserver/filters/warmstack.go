package filters

import (
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// WarmStacks serves requests on long-lived goroutines whose stacks have already grown. The
// HTTP server starts a goroutine with a small stack per request, and a write recurses deeply
// (protobuf decoding, structured-merge-diff's walks of the object for managed fields): its
// stack doubled several times per request, each time copying and unwinding every frame, ~8%
// of the CPU of a create. A waiting worker's stack is only halved by a garbage collection.
type WarmStacks struct {
	next    http.Handler
	work    chan func() // unbuffered: a send succeeds only when a worker waits for work
	idle    time.Duration
	stop    <-chan struct{} // closed when the server stops: idle workers end at once
	started atomic.Int64    // workers started, for tests
}

// OnWarmStacks serves next on warm stacks; a worker ends once idle for idle, and every idle
// one when stop is closed (the server stops).
func OnWarmStacks(next http.Handler, idle time.Duration, stop <-chan struct{}) *WarmStacks {
	return &WarmStacks{next: next, work: make(chan func()), idle: idle, stop: stop}
}

// ServeHTTP runs the request on a waiting worker, or on a new one that then stays, and waits
// for it. A panic is raised again here, where the HTTP server recovers and logs it, with the
// worker's stack (http.ErrAbortHandler as it is: the server aborts the response quietly).
func (p *WarmStacks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	done := make(chan any, 1)
	job := func() {
		defer func() {
			v := recover()
			if v != nil && !isAbort(v) {
				v = panicWithStack{value: v, stack: string(debug.Stack())}
			}
			done <- v
		}()
		p.next.ServeHTTP(w, r)
	}
	select {
	case p.work <- job:
	default:
		p.started.Add(1)
		go p.worker(job)
	}
	if v := <-done; v != nil {
		panic(v)
	}
}

// worker runs jobs until none came for the idle time.
func (p *WarmStacks) worker(job func()) {
	timer := time.NewTimer(p.idle)
	defer timer.Stop()
	for {
		job()
		timer.Reset(p.idle)
		select {
		case job = <-p.work:
		case <-timer.C:
			return
		case <-p.stop:
			return
		}
	}
}
