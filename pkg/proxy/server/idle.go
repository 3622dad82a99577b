package server

import (
	"context"
	"sync"
	"time"
)

// IdleReleaseWindow is how long after the last sync the partial syncs' garbage is given
// back: ten --min-sync-periods without a sync end a burst; a release (~10 ms of CPU at
// 10 000 Services, measured) then costs at most 0.1% of a core however syncs are spaced.
const IdleReleaseWindow = 10 * time.Second

// idleRelease calls release once no sync has come for a window after the last partial one,
// once per such quiet spell: the garbage the partial syncs left between collections would
// otherwise stay in the heap while the daemon is idle, which is most of its life. A full
// sync gives its memory back itself (syncRules), so it cancels a pending release.
type idleRelease struct {
	ctx     context.Context
	window  time.Duration
	release func()
	mu      sync.Mutex
	timer   *time.Timer // nil until the first partial sync
}

// newIdleRelease releases with release (debug.FreeOSMemory) until ctx ends.
func newIdleRelease(ctx context.Context, window time.Duration, release func()) *idleRelease {
	r := &idleRelease{ctx: ctx, window: window, release: release}
	context.AfterFunc(ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.timer != nil {
			r.timer.Stop()
		}
	})
	return r
}

// synced is told every sync: a partial one puts the release off to a window from now, a
// full one cancels it.
func (r *idleRelease) synced(full bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.ctx.Err() != nil:
	case full:
		if r.timer != nil {
			r.timer.Stop()
		}
	case r.timer == nil:
		r.timer = time.AfterFunc(r.window, r.fire)
	default:
		r.timer.Reset(r.window)
	}
}

func (r *idleRelease) fire() {
	if r.ctx.Err() == nil {
		r.release()
	}
}
