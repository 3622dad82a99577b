package podsync

import (
	"context"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/probe"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// The syncer is the pod runtime as the prober manager sees it (prober.Containers and
// prober.Events): where exec probes run, how a container that failed its liveness or
// startup probe is killed, and its events (ContainerEvent, events.go).

// Exec runs exec probes in the container.
func (s *Syncer) Exec(containerID string) probe.Execer { return s.execIn(containerID) }

// Kill stops a container that failed its liveness or startup probe, after its preStop hook.
func (s *Syncer) Kill(ctx context.Context, pod *corev1.Pod, container, containerID string, grace *int64) error {
	g := killGrace(pod)
	if grace != nil {
		g = time.Duration(*grace) * time.Second
	}
	rc := runtime.Container{ID: runtime.IDFromStatus(containerID), Name: container}
	return s.stopContainers(ctx, nil, []runtime.Container{rc}, s.runPreStop(ctx, pod, rc, g))
}

// execIn runs commands in the container with the given status ID (exec probes).
func (s *Syncer) execIn(containerID string) probe.Execer {
	return s.execInID(runtime.IDFromStatus(containerID))
}

// execInID runs commands in the container with the given runtime ID (exec hooks).
func (s *Syncer) execInID(id string) probe.Execer {
	return func(ctx context.Context, cmd []string, out io.Writer) (int, error) {
		return s.rt.Exec(ctx, id, runtime.ExecOptions{Cmd: cmd, Stdout: out, Stderr: out})
	}
}
