// Package runner runs a function as kube-proxy runs its syncs: at once when asked, but never
// more often than a minimum interval (requests in between coalesce into one run), and at
// least every maximum interval even when nobody asks.
package runner

import (
	"context"
	"time"
)

// Runner is a bounded-frequency runner.
type Runner struct {
	minInterval, maxInterval time.Duration
	fn                       func()
	kick                     chan struct{}
}

// New runs fn through Loop.
func New(fn func(), minInterval, maxInterval time.Duration) *Runner {
	return &Runner{minInterval: minInterval, maxInterval: maxInterval, fn: fn, kick: make(chan struct{}, 1)}
}

// Run asks for a run as soon as the minimum interval allows; it never blocks.
func (r *Runner) Run() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Loop runs fn once at once, then as asked and periodically, until ctx ends.
func (r *Runner) Loop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var last time.Time
	due := time.Now()
	// schedule moves the next run to at (only ever earlier).
	schedule := func(at time.Time) {
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		due = at
		timer.Reset(max(0, time.Until(at)))
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
			if at := last.Add(r.minInterval); at.Before(due) {
				schedule(at)
			}
		case <-timer.C:
			r.fn()
			last = time.Now()
			due = last.Add(r.maxInterval)
			timer.Reset(r.maxInterval)
		}
	}
}
