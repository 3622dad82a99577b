package podsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// Ephemeral containers (kubectl debug) join a running pod's sandbox as its app containers
// do: its network, IPC and UTS namespaces, and with targetContainerName the target's PID
// namespace. As the kubelet does, each is started once, whether or not the pod has
// finished initializing, and never restarted nor replaced.

// syncEphemeralContainers starts the pod's ephemeral containers that never ran.
func (s *Syncer) syncEphemeralContainers(ctx context.Context, st *PodState, pod *corev1.Pod, sandbox *runtime.Container, all []runtime.Container) (time.Duration, error) {
	var (
		after time.Duration
		errs  []error
	)
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		spec := (*corev1.Container)(&ec.EphemeralContainerCommon)
		if history := containersNamed(all, spec.Name); len(history) > 0 && history[0].State != runtime.StateCreated {
			continue
		} else if len(history) > 0 { // made but never started: what a failed start left behind
			if err := s.removeContainers(ctx, history[:1]); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		target, ok := pidTarget(pod, ec, all)
		if !ok {
			// The target is not running (yet): as the kubelet, a config error, tried again
			// at the next sync.
			st.waiting[spec.Name] = corev1.ContainerStateWaiting{Reason: reasonCreateConfigError,
				Message: fmt.Sprintf("unable to find target container %v", ec.TargetContainerName)}
			continue
		}
		d, err := s.startContainer(ctx, st, pod, spec, sandbox, containerHash(spec), false, target)
		errs = append(errs, err)
		if d > 0 && (after == 0 || d < after) {
			after = d
		}
	}
	return after, errors.Join(errs...)
}

// pidTarget is the runtime container whose PID namespace ec joins: its target's, where
// the pod shares no PID namespace of its own; false while the target does not run.
func pidTarget(pod *corev1.Pod, ec *corev1.EphemeralContainer, all []runtime.Container) (string, bool) {
	if ec.TargetContainerName == "" || pod.Spec.HostPID || (pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace) {
		return "", true
	}
	history := containersNamed(all, ec.TargetContainerName)
	if len(history) == 0 || !isRunning(history[0]) {
		return "", false
	}
	return history[0].ID, true
}

// ephemeralStatuses are status.ephemeralContainerStatuses: like a container's, never
// ready (no probe or service counts on them) and without a started field, as the kubelet
// reports them.
func ephemeralStatuses(pod *corev1.Pod, all []runtime.Container, waiting map[string]corev1.ContainerStateWaiting, logs terminationLogs) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for i := range pod.Spec.EphemeralContainers {
		spec := (*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		var w *corev1.ContainerStateWaiting
		if cur, ok := waiting[spec.Name]; ok {
			w = &cur
		}
		history := containersNamed(all, spec.Name)
		if len(history) > 1 {
			history = history[:1] // never restarted: no last state
		}
		cs := containerStatus(spec, history, w, 0, logs)
		cs.Ready, cs.Started = false, nil
		if len(history) > 0 {
			cs.Resources = &corev1.ResourceRequirements{} // the allocated ones, which validation keeps empty
		}
		out = append(out, cs)
	}
	return out
}

// withoutEphemeral are the containers of cs that are not the pod's ephemeral containers.
func withoutEphemeral(pod *corev1.Pod, cs []runtime.Container) []runtime.Container {
	return slices.DeleteFunc(slices.Clone(cs), func(c runtime.Container) bool {
		return slices.ContainsFunc(pod.Spec.EphemeralContainers, func(ec corev1.EphemeralContainer) bool { return ec.Name == c.Name })
	})
}
