package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestCoalescesAndBounds: a burst of requests inside the minimum interval makes one more
// run, not one per request; with no request the periodic run still comes.
func TestCoalescesAndBounds(t *testing.T) {
	var runs atomic.Int32
	r := New(func() { runs.Add(1) }, 300*time.Millisecond, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Loop(ctx)
	time.Sleep(50 * time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d runs at start, want 1", n)
	}
	for range 20 {
		r.Run()
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(350 * time.Millisecond)
	if n := runs.Load(); n != 2 {
		t.Fatalf("%d runs after a burst of 20 requests, want 2 (coalesced, after the minimum interval)", n)
	}
	time.Sleep(time.Second)
	if n := runs.Load(); n != 3 {
		t.Fatalf("%d runs after idling past the maximum interval, want 3", n)
	}
}
