package podsync

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/agent/status"
	"github.com/minik8s/minik8s/pkg/restartpolicy"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// The kubelet's words for a pod restarting all its containers in place
// (RestartAllContainersOnContainerExits).
const (
	reasonRestartAllContainersStarted = "RestartAllContainersStarted"
	messageRemovedByRestartAll        = "The container is removed because RestartAllContainers in place"
)

// removedByRestartAll is the lastState of a container removed by a restart of all the pod's
// containers, until its new run has ended too (the kubelet's convertToAPIContainerStatuses).
func removedByRestartAll() *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{Reason: status.RestartingAllContainers, Message: messageRemovedByRestartAll, ExitCode: 137}
}

// restartsAll: the run exited with a code a RestartAllContainers rule of c matches.
func restartsAll(c *corev1.Container, run runtime.Container) bool {
	return run.State == runtime.StateExited && restartpolicy.RestartsAllContainers(c, run.ExitCode)
}

// restartAllTriggered: the current run of one of the pod's init or app containers exited
// with a code its RestartAllContainers rule matches (the kubelet's ShouldAllContainersRestart).
func restartAllTriggered(pod *corev1.Pod, all []runtime.Container) bool {
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if history := containersNamed(all, c.Name); len(history) > 0 && restartsAll(&c, history[0]) {
			return true
		}
	}
	return false
}

// allContainersRestarting is the pod's AllContainersRestarting condition when it is not
// restarting them (the kubelet's GenerateAllContainersRestartingCondition), for a pod with
// a RestartAllContainers rule; ok is false for one without, which has no such condition.
func allContainersRestarting(pod *corev1.Pod, phase corev1.PodPhase) (cond corev1.PodCondition, ok bool) {
	cond = corev1.PodCondition{Type: corev1.AllContainersRestarting, Status: corev1.ConditionFalse}
	switch phase {
	case corev1.PodSucceeded:
		cond.Reason = "PodCompleted"
	case corev1.PodFailed:
		cond.Reason = "PodFailed"
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for _, rule := range c.RestartPolicyRules {
			if rule.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
				return cond, true
			}
		}
	}
	return cond, false
}

// restartAll starts all the pod's containers over in its sandbox, as the kubelet does for a
// pod marked AllContainersRestarting: it writes the status saying so, then kills (without
// grace) and removes every init and app container, app containers first and the ones whose
// exit set it off last. It returns the pod's containers as they are after.
func (s *Syncer) restartAll(ctx context.Context, st *PodState, apiPod, pod *corev1.Pod, all []runtime.Container) ([]runtime.Container, error) {
	ps := s.podStatus(st, pod, all, true)
	status.SetCondition(&ps, corev1.PodCondition{Type: corev1.AllContainersRestarting, Status: corev1.ConditionTrue,
		Reason: reasonRestartAllContainersStarted, Message: "container exited with restart policy rule"}, apiTime(s.clock.Now()))
	if err := s.writeStatus(ctx, st, apiPod, ps); err != nil {
		return nil, err
	}
	// A container that had a run (not waiting to start or restart) counts a restart, its
	// lastState saying why. One waiting to restart keeps its status (the kubelet's reason
	// cache keeps why it waits) and counts the restart when it starts.
	reset := map[string]bool{}
	for _, cs := range slices.Concat(ps.InitContainerStatuses, ps.ContainerStatuses) {
		switch {
		case cs.State.Waiting == nil:
			reset[cs.Name] = true
			st.restartCounts[cs.Name]++
			st.removed[cs.Name] = removedRun{lastState: removedByRestartAll()}
			delete(st.waiting, cs.Name)
		case cs.LastTerminationState.Terminated != nil && len(containersNamed(all, cs.Name)) > 0:
			st.removed[cs.Name] = removedRun{lastState: cs.LastTerminationState.Terminated, uncounted: true}
		}
	}
	var targets, sources []runtime.Container
	for _, specs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range specs {
			for _, run := range containersNamed(all, specs[i].Name) {
				if restartsAll(&specs[i], run) {
					sources = append(sources, run)
				} else {
					targets = append(targets, run)
				}
			}
		}
	}
	for _, c := range slices.Concat(targets, sources) {
		if c.State != runtime.StateExited && c.State != runtime.StateCreated {
			s.ContainerEvent(pod, c.Name, corev1.EventTypeNormal, eventKilling, "killing")
			if err := s.rt.StopContainer(ctx, c.ID, 0); err != nil {
				return nil, fmt.Errorf("kill container %s of pod %s: %w", c.Name, PodKey(pod), err)
			}
		}
		if err := s.removeContainers(ctx, []runtime.Container{c}); err != nil {
			return nil, err
		}
	}
	all, err := s.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s: %w", PodKey(pod), err)
	}
	// The status once they are gone, as the kubelet's next sync writes it before it starts
	// them again: each container reset waits, saying why (convertToAPIContainerStatuses).
	ps = s.podStatus(st, pod, all, true)
	for _, list := range [][]corev1.ContainerStatus{ps.InitContainerStatuses, ps.ContainerStatuses} {
		for i := range list {
			if reset[list[i].Name] {
				list[i].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: status.RestartingAllContainers, Message: messageRemovedByRestartAll}}
			}
		}
	}
	return all, s.writeStatus(ctx, st, apiPod, ps)
}
