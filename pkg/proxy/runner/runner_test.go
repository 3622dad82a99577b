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
	// Back to back: with a sleep between them, a loaded machine's late wake-ups stretched the
	// burst past the minimum interval and made a second run.
	for range 20 {
		r.Run()
	}
	// Polled rather than slept on, so a loaded machine's late wake-ups do not fail it: the
	// burst makes one run, the next comes only a maximum interval later.
	waitRuns(t, &runs, 2, "after a burst of 20 requests (coalesced, after the minimum interval)")
	time.Sleep(400 * time.Millisecond)
	if n := runs.Load(); n != 2 {
		t.Fatalf("%d runs 0.4 s after the burst's run, want 2 (the periodic run is a second away)", n)
	}
	waitRuns(t, &runs, 3, "after idling past the maximum interval")
}

func waitRuns(t *testing.T, runs *atomic.Int32, want int32, when string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for runs.Load() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runs.Load(); n != want {
		t.Fatalf("%d runs %s, want %d", n, when, want)
	}
}
