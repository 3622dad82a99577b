package agent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/probe"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// probeTargets is the pod runtime as the prober manager sees it: where exec probes run,
// how a container that failed its liveness or startup probe is killed, and its events.
type probeTargets struct{ a *Agent }

func (t probeTargets) Exec(containerID string) probe.Execer { return t.a.execIn(containerID) }

func (t probeTargets) Kill(ctx context.Context, pod *corev1.Pod, container, containerID string, grace *int64) error {
	g := gracePeriod(pod)
	if grace != nil {
		g = time.Duration(*grace) * time.Second
	}
	rc := runtime.Container{ID: runtime.IDFromStatus(containerID), Name: container}
	return t.a.stopContainers(ctx, nil, []runtime.Container{rc}, t.a.runPreStop(ctx, pod, rc, g))
}

func (t probeTargets) ContainerEvent(pod *corev1.Pod, container, eventType, reason, format string, args ...any) {
	t.a.containerEvent(pod, container, eventType, reason, format, args...)
}

// probedContainers are the containers of a pod that may have probes: its sidecars and
// app containers.
func probedContainers(pod *corev1.Pod) []*corev1.Container {
	var probed []*corev1.Container
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			probed = append(probed, &pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		probed = append(probed, &pod.Spec.Containers[i])
	}
	return probed
}
