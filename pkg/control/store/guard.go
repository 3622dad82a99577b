package store

import (
	"context"
	"sync"
)

// CommitGuard settles, once per request, the race between the request's first write and
// its timeout: either a write is committed (and the request's real answer goes out, however
// late) or the request timed out (and none of its writes is committed), so a client never
// gets 504 for a write that landed. The API server's timeout filter puts one in each
// request's context.
type CommitGuard struct {
	mu       sync.Mutex
	inFlight int  // writes handed to the store and not yet answered
	landed   bool // a write was applied
	timedOut bool
}

type guardKey struct{}

// WithCommitGuard returns ctx carrying a new guard.
func WithCommitGuard(ctx context.Context) (context.Context, *CommitGuard) {
	g := &CommitGuard{}
	return context.WithValue(ctx, guardKey{}, g), g
}

// CommitGuardFrom returns the guard of ctx, or nil.
func CommitGuardFrom(ctx context.Context) *CommitGuard {
	g, _ := ctx.Value(guardKey{}).(*CommitGuard)
	return g
}

// TimeOut marks the request timed out, unless one of its writes is being committed or was
// applied: then it returns false and the request must be let finish.
func (g *CommitGuard) TimeOut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight == 0 && !g.landed {
		g.timedOut = true
	}
	return g.timedOut
}

// TimedOut tells whether TimeOut has marked the request timed out.
func (g *CommitGuard) TimedOut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.timedOut
}

// mayCommit tells whether a write of ctx's request may be committed: with a guard, unless
// the request timed out (and then none of its later writes may be either); without one,
// unless ctx is done. A write let through holds the guard until settle.
func mayCommit(ctx context.Context) (*CommitGuard, error) {
	g := CommitGuardFrom(ctx)
	if g == nil {
		return nil, ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timedOut {
		return g, context.DeadlineExceeded
	}
	g.inFlight++
	return g, nil
}

// settle ends a write mayCommit let through. One refused (a conflict, a missing object)
// landed nothing, so unless another did, the request may still time out: a patch retrying
// after a conflict past its deadline answers 504, not an error of the retry.
func (g *CommitGuard) settle(applied bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
	g.landed = g.landed || applied
}
