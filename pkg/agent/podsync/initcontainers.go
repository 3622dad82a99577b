package podsync

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/agent/status"
	"github.com/minik8s/minik8s/pkg/restartpolicy"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// reasonPodInitializing is the waiting reason of containers held back by init containers.
const reasonPodInitializing = "PodInitializing"

// initRestarts: a sidecar always runs again; a regular init container that succeeded
// never does, and one that failed as its restart policy and rules, or else the pod's
// restartPolicy, say (the kubelet's computeInitContainerActions).
func initRestarts(pod *corev1.Pod, c *corev1.Container) restartCheck {
	return func(exitCode int32) bool {
		return status.IsSidecar(c) || exitCode != 0 && restartpolicy.ContainerShouldRestart(&pod.Spec, c, exitCode)
	}
}

// syncInitContainers runs the pod's init containers one at a time in spec order, each
// to success before the next starts (a sidecar: until it runs and has started), and
// says whether the app containers may start. Once an app container has run, regular
// init containers are never run again, as in the kubelet; sidecars are kept running.
func (s *Syncer) syncInitContainers(ctx context.Context, st *PodState, pod *corev1.Pod, sandbox *runtime.Container, all []runtime.Container) (bool, time.Duration, error) {
	appsStarted := anyAppContainerRan(pod, all)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		sidecar := status.IsSidecar(c)
		if !sidecar && appsStarted {
			continue
		}
		after, err := s.syncContainer(ctx, st, pod, c, initRestarts(pod, c), sandbox, all)
		if err != nil || after > 0 {
			return false, after, err
		}
		// all predates the sync: a container started just now is not in it and is not done.
		history := containersNamed(all, c.Name)
		if len(history) == 0 {
			return false, 0, nil
		}
		cur := history[0]
		switch {
		case sidecar && (!isRunning(cur) || !s.probes.Started(pod.UID, c.Name)):
			return appsStarted, 0, nil
		case !sidecar && (cur.State != runtime.StateExited || cur.ExitCode != 0):
			return false, 0, nil
		}
	}
	return true, 0, nil
}

// anyAppContainerRan: some app container of the pod exists in the runtime, so the pod
// was initialized before.
func anyAppContainerRan(pod *corev1.Pod, all []runtime.Container) bool {
	for _, c := range pod.Spec.Containers {
		if len(containersNamed(all, c.Name)) > 0 {
			return true
		}
	}
	return false
}

// incompleteInitContainers names the init containers that keep the pod uninitialized:
// regular ones that have not succeeded and sidecars that have not started. None do
// once an app container has run.
func incompleteInitContainers(pod *corev1.Pod, initStatuses, statuses []corev1.ContainerStatus) []string {
	for _, cs := range statuses {
		if cs.State.Waiting == nil || cs.LastTerminationState.Terminated != nil {
			return nil // it runs or ran
		}
	}
	var names []string
	for i, cs := range initStatuses {
		if status.IsSidecar(&pod.Spec.InitContainers[i]) {
			if cs.State.Running == nil || cs.Started == nil || !*cs.Started {
				names = append(names, cs.Name)
			}
			continue
		}
		if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
			names = append(names, cs.Name)
		}
	}
	return names
}

// initPending: a regular init container runs, or waits to run with no run before it, so
// the pod is Pending though it may have been initialized before (all its containers
// restarted): the kubelet's getPhase counts it a pending init container.
func initPending(pod *corev1.Pod, initStatuses []corev1.ContainerStatus) bool {
	for i, cs := range initStatuses {
		if !status.IsSidecar(&pod.Spec.InitContainers[i]) && (cs.State.Running != nil || cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil) {
			return true
		}
	}
	return false
}

// initFailed: a regular init container failed and will not run again, so the pod has
// failed (the kubelet's getPhase).
func initFailed(pod *corev1.Pod, initStatuses []corev1.ContainerStatus) bool {
	for i, cs := range initStatuses {
		c := &pod.Spec.InitContainers[i]
		t := cs.State.Terminated
		if cs.State.Waiting != nil {
			t = cs.LastTerminationState.Terminated
		}
		if !status.IsSidecar(c) && t != nil && t.ExitCode != 0 && !status.RunsAgain(&pod.Spec, c, t) {
			return true
		}
	}
	return false
}
