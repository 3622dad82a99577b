package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// syncPod converges one pod that should run: its sandbox, then its init
// containers one by one, then its containers in spec order, then its status. A pod that has finished
// (Succeeded/Failed) only gets its sandbox and network released.
func (a *Agent) syncPod(ctx context.Context, st *podState, pod *corev1.Pod) (time.Duration, error) {
	if isTerminal(pod.Status.Phase) {
		return 0, a.releaseFinishedPod(ctx, st, pod)
	}
	deadline, hasDeadline := a.activeDeadlineLeft(st, pod)
	if hasDeadline && deadline <= 0 {
		return 0, a.failPastDeadline(ctx, st, pod)
	}
	st.trace.mark("waiting", a.clock.Now())
	all, err := a.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return 0, fmt.Errorf("list containers of pod %s: %w", podKey(pod), err)
	}
	st.trace.mark("list", a.clock.Now())
	// A restart count the pod's status does not give (a static pod's, after a restart) is
	// the one recorded on the container, as the kubelet reads it from the runtime.
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if _, known := st.restartCounts[c.Name]; !known {
			if history := containersNamed(all, c.Name); len(history) > 0 {
				st.restartCounts[c.Name] = history[0].RestartCount
			}
		}
	}
	var (
		after time.Duration
		errs  []error
	)
	// Volumes first, as the kubelet waits for them before the sandbox: a pod whose
	// ConfigMap is missing stays ContainerCreating, with FailedMount events.
	vols, err := a.volumes.SetUp(ctx, pod)
	st.volumes = vols
	st.trace.mark("volumes", a.clock.Now())
	if err != nil {
		a.podEvent(pod, corev1.EventTypeWarning, "FailedMount", "%s", err.Error())
		errs = append(errs, fmt.Errorf("volumes of pod %s: %w", podKey(pod), err))
		status := a.podStatus(st, pod, all, false)
		return 0, errors.Join(append(errs, a.writeStatus(ctx, st, pod, status))...)
	}
	sandbox, err := a.ensureSandbox(ctx, st, pod, all)
	if err != nil {
		errs = append(errs, err)
	}
	if sandbox != nil {
		if !slices.ContainsFunc(all, func(c runtime.Container) bool { return c.ID == sandbox.ID }) {
			// A new sandbox: the pod's old containers are gone.
			if all, err = a.rt.ListContainers(ctx, string(pod.UID)); err != nil {
				return 0, fmt.Errorf("list containers of pod %s: %w", podKey(pod), err)
			}
		}
		var d time.Duration
		var initialized bool
		initialized, d, err = a.syncInitContainers(ctx, st, pod, sandbox, all)
		errs = append(errs, err)
		after = d
		for i := range pod.Spec.Containers {
			if !initialized {
				break
			}
			d, err := a.syncContainer(ctx, st, pod, &pod.Spec.Containers[i], pod.Spec.RestartPolicy, sandbox, all)
			errs = append(errs, err)
			if d > 0 && (after == 0 || d < after) {
				after = d
			}
		}
		d, err = a.syncEphemeralContainers(ctx, st, pod, sandbox, all)
		errs = append(errs, err)
		if d > 0 && (after == 0 || d < after) {
			after = d
		}
	}

	if all, err = a.rt.ListContainers(ctx, string(pod.UID)); err != nil {
		return after, errors.Join(append(errs, fmt.Errorf("list containers of pod %s: %w", podKey(pod), err))...)
	}
	status := a.podStatus(st, pod, all, sandbox != nil)
	if a.probes != nil {
		probed := pod.DeepCopy()
		probed.Status.PodIP = status.PodIP
		a.probes.Sync(probed, probedContainers(probed), slices.Concat(status.InitContainerStatuses, status.ContainerStatuses))
	}
	st.trace.mark("status", a.clock.Now())
	err = a.writeStatus(ctx, st, pod, status)
	st.trace.mark("statusWrite", a.clock.Now())
	if err == nil && status.Phase == corev1.PodRunning {
		st.trace.running(a.log, podKey(pod), a.clock.Now())
	}
	errs = append(errs, err)
	if isTerminal(status.Phase) {
		errs = append(errs, a.releaseFinishedPod(ctx, st, pod))
	}
	errs = append(errs, a.removeDeadContainers(ctx, pod, all))
	if hasDeadline && (after == 0 || deadline < after) {
		after = deadline
	}
	return after, errors.Join(errs...)
}

// activeDeadlineLeft is how long the pod may still be active on the node, when its
// spec sets activeDeadlineSeconds.
func (a *Agent) activeDeadlineLeft(st *podState, pod *corev1.Pod) (time.Duration, bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil {
		return 0, false
	}
	deadline := time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second
	return deadline - a.clock.Since(st.startTime.Time), true
}

// failPastDeadline ends a pod that outlived its activeDeadlineSeconds: its containers
// are stopped and it fails with the kubelet's reason and message.
func (a *Agent) failPastDeadline(ctx context.Context, st *podState, pod *corev1.Pod) error {
	const msg = "Pod was active on the node longer than the specified deadline"
	a.podEvent(pod, corev1.EventTypeNormal, "DeadlineExceeded", msg)
	if err := a.releaseFinishedPod(ctx, st, pod); err != nil {
		return err
	}
	all, err := a.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", podKey(pod), err)
	}
	status := a.podStatus(st, pod, all, false)
	status.Phase, status.Reason, status.Message = corev1.PodFailed, "DeadlineExceeded", msg
	return a.writeStatus(ctx, st, pod, status)
}

// releaseFinishedPod frees what a finished pod no longer needs — running
// containers (if something else ended the pod), sandbox, network — and keeps
// its exited containers for their status and logs, as the kubelet does.
func (a *Agent) releaseFinishedPod(ctx context.Context, st *podState, pod *corev1.Pod) error {
	if st.released {
		return nil
	}
	all, err := a.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", podKey(pod), err)
	}
	if err := a.stopContainers(ctx, pod, appContainersOf(all), gracePeriod(pod)); err != nil {
		return err
	}
	if err := a.releaseSandbox(ctx, podRef(pod), sandboxesOf(all)); err != nil {
		return err
	}
	st.released = true
	return nil
}

// removeDeadContainers keeps, per container name, the current container and
// the one before it (the source of lastState), like the kubelet's container
// GC; older exited ones and stopped sandboxes other than the newest go.
func (a *Agent) removeDeadContainers(ctx context.Context, pod *corev1.Pod, all []runtime.Container) error {
	var dead []runtime.Container
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		history := containersNamed(all, c.Name)
		for _, old := range history[min(2, len(history)):] {
			if old.State == runtime.StateExited {
				dead = append(dead, old)
			}
		}
	}
	return a.removeContainers(ctx, dead)
}

// podHandler is the agent as its pod workers see it.
type podHandler struct{ a *Agent }

func (h podHandler) SyncPod(ctx context.Context, st *podState, pod *corev1.Pod) (time.Duration, error) {
	return h.a.syncPod(ctx, st, pod)
}

func (h podHandler) TerminatePod(ctx context.Context, st *podState, pod *corev1.Pod, gone bool) error {
	return h.a.terminatePod(ctx, st, pod, gone)
}
