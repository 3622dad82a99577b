package workloop

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

func TestRunRetriesErrorsAndRequeues(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan struct{})
	go func() {
		Run(ctx, q, slog.New(slog.DiscardHandler), func(_ context.Context, key string) (time.Duration, error) {
			mu.Lock()
			defer mu.Unlock()
			calls[key]++
			switch {
			case key == "flaky" && calls[key] < 3:
				return 0, errors.New("not yet")
			case key == "again" && calls[key] < 2:
				return time.Millisecond, nil
			}
			return 0, nil
		})
		close(done)
	}()
	q.Add("flaky")
	q.Add("again")
	q.Add("once")
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		ok := calls["flaky"] == 3 && calls["again"] == 2 && calls["once"] == 1
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls = %v, want flaky 3 (two errors), again 2 (one requeue), once 1", calls)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop when its context ended")
	}
}

// TestRunWorkersWaitsForCachesThenWorksInParallel: nothing is handled before the caches
// sync; then n workers handle keys at the same time; it returns when ctx ends.
func TestRunWorkersWaitsForCachesThenWorksInParallel(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[int]())
	for i := range 4 {
		q.Add(i)
	}
	var synced atomic.Bool
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	handled := make(chan int, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		RunWorkers(ctx, 2, q, slog.New(slog.NewTextHandler(io.Discard, nil)), func(_ context.Context, k int) (time.Duration, error) {
			if !synced.Load() {
				t.Errorf("key %d handled before the caches synced", k)
			}
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			<-release
			inFlight.Add(-1)
			handled <- k
			return 0, nil
		}, func() bool { return synced.Load() })
		close(done)
	}()
	time.Sleep(200 * time.Millisecond)
	synced.Store(true)
	time.Sleep(300 * time.Millisecond)
	close(release)
	for range 4 {
		<-handled
	}
	if most.Load() != 2 {
		t.Errorf("%d keys handled at once, want 2 workers", most.Load())
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("RunWorkers did not return when its context ended")
	}
}
