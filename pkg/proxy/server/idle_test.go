package server

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestIdleRelease: the memory is given back once a window after a burst of partial syncs,
// not during it, not again without another sync, again after a later burst; a full sync
// cancels it (it released itself), and nothing is released once the context has ended.
// synctest's clock: no wall-clock timing.
func TestIdleRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		const window = 10 * time.Second
		var releases atomic.Int32
		r := newIdleRelease(ctx, window, func() { releases.Add(1) })
		check := func(want int32, when string) {
			t.Helper()
			synctest.Wait() // the timer's goroutine has run, if it was due
			if n := releases.Load(); n != want {
				t.Fatalf("%d releases %s, want %d", n, when, want)
			}
		}
		burst := func() { // a sync every second (--min-sync-period) for 30 s
			before := releases.Load()
			for range 30 {
				r.synced(false)
				time.Sleep(time.Second)
				check(before, "during a burst")
			}
		}
		time.Sleep(time.Minute)
		check(0, "before any sync")
		burst()
		time.Sleep(window)
		check(1, "a window after the burst's last sync")
		time.Sleep(time.Hour)
		check(1, "an hour later, with no sync")
		burst()
		time.Sleep(window)
		check(2, "a window after the second burst")

		r.synced(false)
		time.Sleep(window / 2)
		r.synced(true)
		time.Sleep(time.Hour)
		check(2, "after a partial sync then a full one (which released itself)")
		r.synced(false)
		time.Sleep(window)
		check(3, "a window after a partial sync following a full one")

		r.synced(false)
		cancel()
		time.Sleep(time.Hour)
		check(3, "after the context ended")
		r.synced(false)
		time.Sleep(time.Hour)
		check(3, "after a sync told once the context ended")
	})
}
