// Package starttrace times the steps of a pod's first start on the node and logs them
// once, as the kubelet's pod startup latency tracker logs "Observed pod startup duration".
package starttrace

import (
	"log/slog"
	"time"
)

// Trace times the steps of one pod's first start, from the moment its worker is handed
// the pod to its first Running status written to the API: where a slow start's time went
// (podbench sums these lines over a burst). Only the pod's worker touches it; a nil Trace
// (a pod adopted after a restart) records nothing.
type Trace struct {
	seen, last time.Time
	steps      []traceStep
	done       bool
}

type traceStep struct {
	name string
	took time.Duration
}

// New starts a trace at now, when the pod's worker is handed the pod.
func New(now time.Time) *Trace { return &Trace{seen: now, last: now} }

// Mark ends the step called name (the time since the previous mark); a step met again
// (a second container's image check, the next sync's wait) adds to it.
func (t *Trace) Mark(name string, now time.Time) {
	if t == nil || t.done {
		return
	}
	took := now.Sub(t.last)
	t.last = now
	for i := range t.steps {
		if t.steps[i].name == name {
			t.steps[i].took += took
			return
		}
	}
	t.steps = append(t.steps, traceStep{name, took})
}

// Running logs the trace to log once, when the pod's Running status has been written.
func (t *Trace) Running(log *slog.Logger, pod string, now time.Time) {
	if t == nil || t.done {
		return
	}
	t.done = true
	attrs := []any{"pod", pod, "seen", t.seen.UTC().Format(time.RFC3339Nano), "total", now.Sub(t.seen)}
	for _, s := range t.steps {
		attrs = append(attrs, slog.Duration(s.name, s.took))
	}
	log.Info("Observed pod startup duration", attrs...)
	t.steps = nil
}
