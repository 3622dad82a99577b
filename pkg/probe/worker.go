package probe

import (
	"context"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Kind is which probe a worker runs.
type Kind string

const (
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
	Startup   Kind = "Startup"
)

// Runner runs one probe attempt (Run, or a fake in tests).
type Runner func(ctx context.Context) (Result, string)

// Worker probes one container instance as the kubelet's worker does: the first probe after
// initialDelaySeconds (and a random part of a period, so probes spread), then every
// periodSeconds on a fixed cadence, as the kubelet's ticker (a slow probe does not push
// the later ones back; a tick it overran is skipped). Probe times fall on a probeGrid
// boundary. The result flips after successThreshold successes or failureThreshold
// failures in a row. A readiness result starts as failure, liveness as success, startup as
// unknown. Report gets every attempt's result and output and whether the flipped result
// changed, with the flipped result. A liveness or startup worker whose result flips to
// failure stops (the kubelet's onHold): the container is killed, and its next instance
// gets a new worker. A startup worker also stops once it flips to success: a started
// container's startup probe is not run again, so it cannot fail it later.
type Worker struct {
	Kind   Kind
	Probe  *corev1.Probe
	Run    Runner
	Clock  clock.Clock
	Gate   func() bool // liveness and readiness wait until it is true (the startup probe succeeded)
	Report func(r Result, output string, current Result, changed bool)

	result    Result
	successes int32
	failures  int32
	onHold    bool
}

// Initial is a probe kind's result before it first flips.
func Initial(k Kind) Result {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// probeGrid is where probe times fall: every worker's probes are on multiples of it, so
// a node's probes run in a few groups a second instead of each at its own moment. The
// process then wakes ~10 times a second for all its probes, not once per probe, and Go's
// runtime pays per wake-up (sysmon polls every 20 µs for a while after each, idle threads
// are woken and parked): on loopback, 300 probes a second cost the prober 2.5 times less
// CPU on this grid than at random moments (BenchmarkProbeWorkers, docs/performance.md).
// Periods are whole seconds, so probes stay on the grid; the spread of the first probe is
// kept, in steps of probeGrid.
var probeGrid = 100 * time.Millisecond // a variable for the benchmark's baseline (0: no grid)

// Loop probes until ctx ends (the container stopped, or the pod goes).
func (w *Worker) Loop(ctx context.Context) {
	w.result = Initial(w.Kind)
	period := time.Duration(max(w.Probe.PeriodSeconds, 1)) * time.Second
	first := time.Duration(w.Probe.InitialDelaySeconds)*time.Second + time.Duration(rand.Int64N(int64(period)))
	next := w.Clock.Now().Add(first).Truncate(probeGrid).Add(probeGrid)
	t := w.Clock.NewTimer(next.Sub(w.Clock.Now()))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if w.Gate == nil || w.Gate() {
			w.Step(ctx)
		}
		if w.onHold {
			return
		}
		next = next.Add(period)
		if late := w.Clock.Since(next); late >= 0 { // the probe took longer than its period
			next = next.Add((late/period + 1) * period)
		}
		t.Reset(next.Sub(w.Clock.Now()))
	}
}

// Step runs one probe and updates the thresholds.
func (w *Worker) Step(ctx context.Context) {
	r, out := w.Run(ctx)
	successThreshold, failureThreshold := max(w.Probe.SuccessThreshold, 1), max(w.Probe.FailureThreshold, 1)
	changed := false
	switch r {
	case Success, Warning:
		w.successes++
		w.failures = 0
		if w.result != Success && w.successes >= successThreshold {
			w.result, changed = Success, true
			w.onHold = w.Kind == Startup // started: the kubelet does not run its startup probe again
		}
	case Failure:
		w.failures++
		w.successes = 0
		if w.result != Failure && w.failures >= failureThreshold {
			w.result, changed = Failure, true
			w.onHold = w.Kind != Readiness
		}
	}
	if w.Report != nil {
		w.Report(r, out, w.result, changed)
	}
}
