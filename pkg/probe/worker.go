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
// periodSeconds; the result flips after successThreshold successes or failureThreshold
// failures in a row. A readiness result starts as failure, liveness as success, startup as
// unknown. Report gets every attempt's result and output and whether the flipped result
// changed, with the flipped result.
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

// Loop probes until ctx ends (the container stopped, or the pod goes).
func (w *Worker) Loop(ctx context.Context) {
	w.result = Initial(w.Kind)
	period := time.Duration(max(w.Probe.PeriodSeconds, 1)) * time.Second
	first := time.Duration(w.Probe.InitialDelaySeconds)*time.Second + time.Duration(rand.Int64N(int64(period)))
	t := w.Clock.NewTimer(first)
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
		t.Reset(period)
	}
}

// Step runs one probe and updates the thresholds.
func (w *Worker) Step(ctx context.Context) {
	r, out := w.Run(ctx)
	successThreshold, failureThreshold := max(w.Probe.SuccessThreshold, 1), max(w.Probe.FailureThreshold, 1)
	changed := false
	switch r {
	case Success:
		w.successes++
		w.failures = 0
		if w.result != Success && w.successes >= successThreshold {
			w.result, changed = Success, true
		}
	case Failure:
		w.failures++
		w.successes = 0
		if w.result != Failure && w.failures >= failureThreshold {
			w.result, changed = Failure, true
		}
	}
	if w.Report != nil {
		w.Report(r, out, w.result, changed)
	}
}
