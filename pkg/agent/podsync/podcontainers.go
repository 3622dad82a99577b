package podsync

import (
	"cmp"
	"slices"
	"time"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// Views of one pod's runtime containers. Lists come back newest first, the
// way the sync reads them: the first is the current one, the second the
// one it replaced (its lastState).

func sandboxesOf(all []runtime.Container) []runtime.Container {
	return newestFirst(all, func(c runtime.Container) bool { return c.Sandbox })
}

func appContainersOf(all []runtime.Container) []runtime.Container {
	return newestFirst(all, func(c runtime.Container) bool { return !c.Sandbox })
}

func containersNamed(all []runtime.Container, name string) []runtime.Container {
	return newestFirst(all, func(c runtime.Container) bool { return !c.Sandbox && c.Name == name })
}

func newestFirst(all []runtime.Container, keep func(runtime.Container) bool) []runtime.Container {
	var out []runtime.Container
	for _, c := range all {
		if keep(c) {
			out = append(out, c)
		}
	}
	// A container never started (no start time) is the newest: it was made
	// after every container that ran.
	slices.SortStableFunc(out, func(a, b runtime.Container) int {
		at, bt := startAttempt(a), startAttempt(b)
		if at.IsZero() != bt.IsZero() {
			if at.IsZero() {
				return -1
			}
			return 1
		}
		return cmp.Compare(bt.UnixNano(), at.UnixNano())
	})
	return out
}

// startAttempt is when c started, or failed to start; zero if it was never started.
func startAttempt(c runtime.Container) time.Time {
	if c.StartedAt.IsZero() && c.StartError != "" {
		return c.FinishedAt
	}
	return c.StartedAt
}

func isRunning(c runtime.Container) bool { return c.State == runtime.StateRunning }
