package agent

import (
	"cmp"
	"slices"

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
	// A container never started (zero StartedAt) is the newest: it was made
	// after every container that ran.
	slices.SortStableFunc(out, func(a, b runtime.Container) int {
		if a.StartedAt.IsZero() != b.StartedAt.IsZero() {
			if a.StartedAt.IsZero() {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.StartedAt.UnixNano(), a.StartedAt.UnixNano())
	})
	return out
}

func isRunning(c runtime.Container) bool { return c.State == runtime.StateRunning }
