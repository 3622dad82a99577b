package podsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/agent/status"
	"github.com/minik8s/minik8s/pkg/agent/volumes"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// SyncPod converges one pod that should run: its sandbox, then its init
// containers one by one, then its containers in spec order, then its status. A pod that has finished
// (Succeeded/Failed) only gets its sandbox and network released.
func (s *Syncer) SyncPod(ctx context.Context, st *PodState, pod *corev1.Pod) (time.Duration, error) {
	// Finished as the API has it, or as we last wrote it (the informer may lag behind).
	if IsTerminal(pod.Status.Phase) || st.lastStatus != nil && IsTerminal(st.lastStatus.Phase) {
		s.endings.forget(pod.UID)
		if st.released {
			return 0, nil
		}
		if err := s.releaseFinishedPod(ctx, st, pod, gracePeriod(pod)); err != nil {
			return 0, err
		}
		// Released now (an earlier release failed, or minilet restarted before it): the
		// status it ended with, its sandbox gone.
		ps := pod.Status.DeepCopy()
		if st.lastStatus != nil && IsTerminal(st.lastStatus.Phase) {
			ps = st.lastStatus.DeepCopy()
		}
		status.SetCondition(ps, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse}, apiTime(s.clock.Now()))
		if err := s.writeStatus(ctx, st, pod, *ps); err != nil {
			return 0, err
		}
		return 0, s.removeIfEvicted(ctx, pod, *ps)
	}
	if e := s.endings.of(pod.UID); e != nil {
		err := s.fail(ctx, st, pod, e.Ending)
		if err == nil {
			e.finish()
		}
		return 0, err
	}
	deadline, hasDeadline := s.activeDeadlineLeft(st, pod)
	if hasDeadline && deadline <= 0 {
		const msg = "Pod was active on the node longer than the specified deadline"
		s.podEvent(pod, corev1.EventTypeNormal, "DeadlineExceeded", msg)
		return 0, s.fail(ctx, st, pod, Ending{Reason: "DeadlineExceeded", Message: msg, Grace: gracePeriod(pod)})
	}
	st.trace.Mark("waiting", s.clock.Now())
	all, err := s.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return 0, fmt.Errorf("list containers of pod %s: %w", PodKey(pod), err)
	}
	st.trace.Mark("list", s.clock.Now())
	// The pod as the node granted it runs; its status is written to the pod as the API
	// has it.
	apiPod, pod := pod, s.allocate(st, pod, all)
	// A restart count the pod's status does not give (a static pod's, after a restart) is
	// the one recorded on the container, as the kubelet reads it from the runtime.
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if _, known := st.restartCounts[c.Name]; !known {
			if history := containersNamed(all, c.Name); len(history) > 0 {
				st.restartCounts[c.Name] = history[0].RestartCount
			}
		}
	}
	st.noteVanished(pod, all)
	var (
		after time.Duration
		errs  []error
	)
	// A new pod says ContainerCreating before its volumes and sandbox are made, as the
	// kubelet's first status (SetPodStatus before it mounts): else it shows Pending with no
	// containers until its first sync ends.
	if st.lastStatus == nil && len(all) == 0 {
		errs = append(errs, s.writeStatus(ctx, st, apiPod, s.podStatus(st, pod, all, false)))
	}
	// As the kubelet's syncPod: while the network is not ready only hostNetwork pods start.
	if err := s.NetworkReady(); err != nil && !pod.Spec.HostNetwork {
		s.podEvent(pod, corev1.EventTypeWarning, eventNetworkNotReady, "network is not ready: %v", err)
		return 0, errors.Join(append(errs, fmt.Errorf("network is not ready: %w", err))...)
	}
	// Volumes first, as the kubelet waits for them before the sandbox: a pod whose
	// ConfigMap is missing stays ContainerCreating, with FailedMount events. A volume set
	// up before whose refresh failed is still there (the kubelet keeps it mounted): the
	// events say so and the pod goes on.
	vols, err := s.volumes.SetUp(ctx, pod)
	st.volumes = vols
	st.trace.Mark("volumes", s.clock.Now())
	if err != nil {
		failed := []error{err}
		if mountErr := (*volumes.MountError)(nil); errors.As(err, &mountErr) {
			failed = mountErr.Unwrap()
			// A claim not usable yet: the kubelet's SyncPod reports what
			// WaitForAttachAndMount returned at once, at each sync. (Its 2m3s timeout
			// alone gives no event: wait.Interrupted holds for it.)
			if notTaken := mountErr.Unprocessed(); notTaken != nil {
				s.podEvent(pod, corev1.EventTypeWarning, "FailedMount", "Unable to attach or mount volumes: %v", notTaken)
			}
		}
		for _, err := range failed { // one event per volume, as the kubelet's reconciler
			s.podEvent(pod, corev1.EventTypeWarning, "FailedMount", "%s", err.Error())
		}
	}
	if err != nil && len(vols) < len(volumes.Used(pod)) {
		errs = append(errs, fmt.Errorf("volumes of pod %s: %w", PodKey(pod), err))
		status := s.podStatus(st, pod, all, false)
		return 0, errors.Join(append(errs, s.writeStatus(ctx, st, pod, status))...)
	}
	sandbox, err := s.ensureSandbox(ctx, st, pod, all)
	if err != nil {
		errs = append(errs, err)
	}
	if sandbox != nil {
		if !slices.ContainsFunc(all, func(c runtime.Container) bool { return c.ID == sandbox.ID }) {
			// A new sandbox: the pod's old containers are gone.
			if all, err = s.rt.ListContainers(ctx, string(pod.UID)); err != nil {
				return 0, fmt.Errorf("list containers of pod %s: %w", PodKey(pod), err)
			}
		}
		// Their images are made present before any container starts, as the kubelet's
		// SyncPod does once it has the sandbox.
		st.imagePulls = s.pullImageVolumes(ctx, pod)
		if restartAllTriggered(pod, all) {
			if all, err = s.restartAll(ctx, st, apiPod, pod, all); err != nil {
				return 0, errors.Join(append(errs, err)...)
			}
		}
		var d time.Duration
		var initialized bool
		errs = append(errs, s.resizePod(ctx, st, apiPod, pod, all))
		initialized, d, err = s.syncInitContainers(ctx, st, pod, sandbox, all)
		errs = append(errs, err)
		after = d
		for i := range pod.Spec.Containers {
			if !initialized {
				break
			}
			d, err := s.syncContainer(ctx, st, pod, &pod.Spec.Containers[i], appRestarts(pod, &pod.Spec.Containers[i]), sandbox, all)
			errs = append(errs, err)
			if d > 0 && (after == 0 || d < after) {
				after = d
			}
		}
		errs = append(errs, s.finishResize(st, pod))
		s.resizeEvents(st, pod)
		d, err = s.syncEphemeralContainers(ctx, st, pod, sandbox, all)
		errs = append(errs, err)
		if d > 0 && (after == 0 || d < after) {
			after = d
		}
	}

	if all, err = s.rt.ListContainers(ctx, string(pod.UID)); err != nil {
		return after, errors.Join(append(errs, fmt.Errorf("list containers of pod %s: %w", PodKey(pod), err))...)
	}
	status := s.podStatus(st, pod, all, sandbox != nil)
	probed := pod.DeepCopy()
	probed.Status.PodIP = status.PodIP
	s.probes.Sync(probed, podContainerSpecs(probed), // sidecars and app containers may have probes
		slices.Concat(status.InitContainerStatuses, status.ContainerStatuses))
	st.trace.Mark("status", s.clock.Now())
	err = s.writeStatus(ctx, st, apiPod, status)
	st.trace.Mark("statusWrite", s.clock.Now())
	if err == nil && status.Phase == corev1.PodRunning {
		st.trace.Running(s.log, PodKey(pod), s.clock.Now())
	}
	errs = append(errs, err)
	if (IsTerminal(status.Phase) || appsFinished(pod, status)) && !st.released {
		err := s.releaseFinishedPod(ctx, st, pod, gracePeriod(pod))
		if err == nil {
			// Its sandbox gone, the pod is no longer ready to start containers: the kubelet
			// writes the status again once SyncTerminatingPod has stopped it, from the
			// containers as they are now (a sidecar stopped), with the termination messages
			// read before the release removed their files.
			err = s.writeReleasedStatus(ctx, st, apiPod, pod)
		}
		errs = append(errs, err)
	}
	errs = append(errs, s.removeDeadContainers(ctx, pod, all))
	if hasDeadline && (after == 0 || deadline < after) {
		after = deadline
	}
	if st.resizePending != nil && (after == 0 || resizeRetry < after) {
		after = resizeRetry
	}
	return after, errors.Join(errs...)
}

// activeDeadlineLeft is how long the pod may still be active on the node, when its
// spec sets activeDeadlineSeconds.
func (s *Syncer) activeDeadlineLeft(st *PodState, pod *corev1.Pod) (time.Duration, bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil {
		return 0, false
	}
	deadline := time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second
	return deadline - s.clock.Since(st.startTime.Time), true
}

// fail ends a pod that should still run, as e says: its containers stop within e.Grace
// and it fails with e's reason, message and condition.
func (s *Syncer) fail(ctx context.Context, st *PodState, pod *corev1.Pod, e Ending) error {
	if err := s.releaseFinishedPod(ctx, st, pod, e.Grace); err != nil {
		return err
	}
	all, err := s.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", PodKey(pod), err)
	}
	ps := s.podStatus(st, pod, all, false)
	if e.Rejected {
		ps = rejectedStatus(ps)
	}
	ps.Phase, ps.Reason, ps.Message = corev1.PodFailed, e.Reason, e.Message
	if e.Condition != nil {
		status.SetCondition(&ps, *e.Condition, apiTime(s.clock.Now()))
	}
	if err := s.writeStatus(ctx, st, pod, ps); err != nil {
		return err
	}
	return s.removeIfEvicted(ctx, pod, ps)
}

// EvictedReason is the status.reason of a pod the node evicted, and its Event's reason
// (the kubelet's eviction.Reason).
const EvictedReason = "Evicted"

// removeIfEvicted removes every exited container of a pod whose status says the node
// evicted it, as the kubelet's HandlePodReconcile and container GC do (PodIsEvicted,
// deleteContainersInPod with removeAll): their writable layers are what a disk-pressure
// eviction frees. The status is written first, from the containers, and stays as it is:
// a finished pod is not synced again. Other finished pods keep theirs until deleted.
func (s *Syncer) removeIfEvicted(ctx context.Context, pod *corev1.Pod, ps corev1.PodStatus) error {
	if ps.Phase != corev1.PodFailed || ps.Reason != EvictedReason {
		return nil
	}
	_, err := s.RemoveExitedContainers(ctx, pod)
	return err
}

// RemoveExitedContainers removes the exited containers of a pod whose status is written
// as finished, and says how many it removed: an evicted pod's (removeIfEvicted), and
// those of every finished pod when the disk is short, as the kubelet's
// DeleteAllUnusedContainers (its container GC with evictNonDeletedPods: a terminated
// pod's runtime should be removed). The status stays as written, from the containers:
// a finished pod is not synced again.
func (s *Syncer) RemoveExitedContainers(ctx context.Context, pod *corev1.Pod) (int, error) {
	all, err := s.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return 0, fmt.Errorf("list containers of pod %s: %w", PodKey(pod), err)
	}
	exited := slices.DeleteFunc(appContainersOf(all), func(c runtime.Container) bool { return c.State != runtime.StateExited })
	return len(exited), s.removeContainers(ctx, exited)
}

// rejectedStatus is the status of a pod the node refused at admission, as the kubelet's
// rejectPod writes it through its status manager: qosClass and startTime of computed and
// nothing of containers, IPs or generation; of the conditions, only those other writers
// own stay (writeStatus keeps them), the kubelet's own (PodScheduled among them) going as
// its mergePodStatus drops them.
func rejectedStatus(computed corev1.PodStatus) corev1.PodStatus {
	return corev1.PodStatus{QOSClass: computed.QOSClass, StartTime: computed.StartTime}
}

// releaseFinishedPod frees what a finished pod no longer needs — running
// containers (if something else ended the pod), sandbox, network — and keeps
// its exited containers for their status and logs, as the kubelet does.
func (s *Syncer) releaseFinishedPod(ctx context.Context, st *PodState, pod *corev1.Pod, grace time.Duration) error {
	if st.released {
		return nil
	}
	all, err := s.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", PodKey(pod), err)
	}
	if err := s.stopContainers(ctx, pod, appContainersOf(all), grace); err != nil {
		return err
	}
	if err := s.releaseSandbox(ctx, podRef(pod), sandboxesOf(all)); err != nil {
		return err
	}
	// The termination messages are read while their files are there, for the statuses
	// written after the release.
	st.terminationLogs.keep(all)
	// Its volumes go as the kubelet unmounts a terminated pod's: a memory-backed emptyDir
	// would otherwise hold its memory until the pod is deleted.
	if err := s.volumes.TearDown(string(pod.UID)); err != nil {
		return fmt.Errorf("tear down volumes of pod %s: %w", PodKey(pod), err)
	}
	st.released = true
	return nil
}

// appsFinished: none of the pod's app containers runs or will run again, so the pod is
// released, its sidecars stopped with it, though a running sidecar keeps its phase Running
// until then (the kubelet's computePodActions kills a pod with no container left to keep
// or start, and getPhase counts its running sidecars).
func appsFinished(pod *corev1.Pod, ps corev1.PodStatus) bool {
	apps := pod.Spec
	apps.InitContainers = nil
	return IsTerminal(status.Phase(&apps, nil, ps.ContainerStatuses, false))
}

// writeReleasedStatus writes the status of a pod just released, whose sandbox is gone.
func (s *Syncer) writeReleasedStatus(ctx context.Context, st *PodState, apiPod, pod *corev1.Pod) error {
	all, err := s.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", PodKey(pod), err)
	}
	return s.writeStatus(ctx, st, apiPod, s.podStatus(st, pod, all, false))
}

// removeDeadContainers keeps, per container name, the current container and
// the one before it (the source of lastState), like the kubelet's container
// GC; older exited ones and stopped sandboxes other than the newest go.
func (s *Syncer) removeDeadContainers(ctx context.Context, pod *corev1.Pod, all []runtime.Container) error {
	var dead []runtime.Container
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		history := containersNamed(all, c.Name)
		for _, old := range history[min(2, len(history)):] {
			if old.State == runtime.StateExited {
				dead = append(dead, old)
			}
		}
	}
	return s.removeContainers(ctx, dead)
}
