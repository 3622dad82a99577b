package seats

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// queueUp starts an Acquire of flow that records its flow in order once seated and
// releases at once; it returns after the request is waiting.
func queueUp(t *testing.T, p *Pool, flow string, order chan<- string) {
	t.Helper()
	before := p.Waiting()
	go func() {
		release, err := p.Acquire(context.Background(), flow)
		if err != nil {
			order <- "error: " + err.Error()
			return
		}
		order <- flow
		release()
	}()
	waitFor(t, func() bool { return p.Waiting() == before+1 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// A burst of twenty requests on two seats is served in full, never more than two at once.
func TestBurstWaitsForSeats(t *testing.T) {
	p := New(2)
	var serving, most atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := p.Acquire(context.Background(), "burst")
			if err != nil {
				t.Error(err)
				return
			}
			n := serving.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			serving.Add(-1)
			release()
		}()
	}
	wg.Wait()
	if m := most.Load(); m > 2 {
		t.Errorf("%d requests were served at once on 2 seats", m)
	}
	if p.free != 2 || p.Waiting() != 0 {
		t.Errorf("after the burst: %d seats free, %d waiting; want 2 and 0", p.free, p.Waiting())
	}
}

// Flows waiting for one seat take turns, each in its own arrival order: a flow that queued
// many requests first does not go before the others' first.
func TestFlowsTakeTurns(t *testing.T) {
	p := New(1)
	hold, err := p.Acquire(context.Background(), "holder")
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 10)
	for _, flow := range []string{"a", "a", "a", "b", "c", "b"} {
		queueUp(t, p, flow, order)
	}
	hold()
	var got []string
	for range 6 {
		got = append(got, <-order)
	}
	want := []string{"a", "b", "c", "a", "b", "a"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("seated in the order %v, want %v", got, want)
		}
	}
}

// A flow's queue holds FlowQueueLimit requests; more are refused while other flows still
// queue.
func TestFlowQueueLimit(t *testing.T) {
	p := New(1)
	hold, err := p.Acquire(context.Background(), "holder")
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, FlowQueueLimit+1)
	for range FlowQueueLimit {
		queueUp(t, p, "flood", order)
	}
	if _, err := p.Acquire(context.Background(), "flood"); !errors.Is(err, ErrQueueFull) {
		t.Errorf("request %d of one flow: %v, want %v", FlowQueueLimit+1, err, ErrQueueFull)
	}
	queueUp(t, p, "other", order)
	hold()
	for range FlowQueueLimit + 1 {
		if flow := <-order; flow != "flood" && flow != "other" {
			t.Fatal(flow)
		}
	}
}

// A request waits a quarter of what its deadline leaves it, then is refused; a cancelled
// one leaves at once. Neither takes a seat with it: the next request after the holder's
// release is seated without waiting.
func TestWaitLimitAndCancel(t *testing.T) {
	p := New(1)
	hold, err := p.Acquire(context.Background(), "holder")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := p.Acquire(ctx, "late"); !errors.Is(err, ErrWaitedTooLong) {
		t.Errorf("waiting past the wait limit: %v, want %v", err, ErrWaitedTooLong)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond || waited > 150*time.Millisecond {
		t.Errorf("waited %v with 200ms left, want about 50ms", waited)
	}
	gone, leave := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := p.Acquire(gone, "gone")
		done <- err
	}()
	waitFor(t, func() bool { return p.Waiting() == 1 })
	leave()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait: %v, want %v", err, context.Canceled)
	}
	if p.Waiting() != 0 {
		t.Errorf("%d still waiting", p.Waiting())
	}
	hold()
	quick, cancelQuick := context.WithTimeout(context.Background(), 4*time.Millisecond)
	defer cancelQuick()
	release, err := p.Acquire(quick, "next")
	if err != nil {
		t.Fatalf("the one seat after every waiter left: %v", err)
	}
	release()
}
