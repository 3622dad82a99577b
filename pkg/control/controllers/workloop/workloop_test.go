package workloop

import (
	"context"
	"errors"
	"log/slog"
	"sync"
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
