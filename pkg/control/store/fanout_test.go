package store

import (
	"context"
	"fmt"
	"testing"
)

func testEvent(rev int64) Event {
	return Event{Type: Added, Key: fmt.Sprintf("/registry/f/%d", rev), Value: []byte("v"), Revision: rev}
}

// A replaying watcher can read from history events that are committed but not yet
// published; when they are published it must not get them twice.
func TestBroadcasterHistoryAheadOfPublish(t *testing.T) {
	const published, committed = 10, 12
	history := func(_ context.Context, _ string, after int64, _ int) ([]Event, int64, error) {
		var evs []Event
		for rev := after + 1; rev <= committed; rev++ {
			evs = append(evs, testEvent(rev))
		}
		return evs, committed, nil
	}
	b := newBroadcaster(published, 0, 2, 100, history, func(string) {})
	ch := mustWatchBroadcaster(t, b, 5)
	got := receive(t, ch, committed-5)
	b.publish([]Event{testEvent(11), testEvent(12), testEvent(13)})
	got = append(got, receive(t, ch, 1)...)
	for i, ev := range got {
		if ev.Revision != int64(6+i) {
			t.Fatalf("event %d has revision %d, want %d", i, ev.Revision, 6+i)
		}
	}
	expectQuiet(t, ch)
}

// Watches within the ring are served from it; older ones go to history.
func TestBroadcasterRingCoverage(t *testing.T) {
	var historyAfter []int64
	history := func(_ context.Context, _ string, after int64, _ int) ([]Event, int64, error) {
		historyAfter = append(historyAfter, after)
		return []Event{testEvent(after + 1)}, after + 1, nil
	}
	b := newBroadcaster(0, 0, 3, 100, history, func(string) {})
	b.publish([]Event{testEvent(1), testEvent(2), testEvent(3), testEvent(4), testEvent(5)})

	got := receive(t, mustWatchBroadcaster(t, b, 2), 3)
	if got[0].Revision != 3 || got[2].Revision != 5 || len(historyAfter) != 0 {
		t.Fatalf("watch inside the ring: revisions %d..%d, history reads %v", got[0].Revision, got[2].Revision, historyAfter)
	}
	got = receive(t, mustWatchBroadcaster(t, b, 1), 4)
	if got[0].Revision != 2 || got[3].Revision != 5 || len(historyAfter) != 1 || historyAfter[0] != 1 {
		t.Fatalf("watch behind the ring: revisions %d..%d, history reads %v", got[0].Revision, got[3].Revision, historyAfter)
	}
}

func mustWatchBroadcaster(t *testing.T, b *broadcaster, from int64) <-chan Event {
	t.Helper()
	ch, err := b.watch(t.Context(), "/registry/f/", from)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
