package agent

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/qos"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// podStatus computes a pod's status from its runtime containers, the way the
// kubelet's generateAPIPodStatus does. Fields minilet does not own (other
// writers' conditions, nominatedNodeName, qosClass) are kept.
func (a *Agent) podStatus(st *podState, pod *corev1.Pod, all []runtime.Container, sandboxReady bool) corev1.PodStatus {
	s := *pod.Status.DeepCopy()
	s.HostIP = a.cfg.NodeIP
	if s.QOSClass == "" { // set by the API server at create; static pods come without
		s.QOSClass = qos.Class(pod)
	}
	s.HostIPs = []corev1.HostIP{{IP: a.cfg.NodeIP}}
	if st.podIP != nil {
		s.PodIP = st.podIP.String()
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	}
	startTime := st.startTime
	s.StartTime = &startTime
	statusOf := func(spec *corev1.Container) corev1.ContainerStatus {
		var waiting *corev1.ContainerStateWaiting
		if w, ok := st.waiting[spec.Name]; ok {
			waiting = &w
		}
		history := containersNamed(all, spec.Name)
		if prev, ok := st.previous[spec.Name]; ok && len(history) == 1 && history[0].ID != prev.ID {
			history = append(history, prev)
		}
		cs := containerStatus(spec, history, waiting, st.restartCounts[spec.Name])
		if a.probes != nil && cs.State.Running != nil { // probes decide readiness; without them a running container is ready
			cs.Ready = a.probes.Ready(pod.UID, spec)
			cs.Started = ptr.To(a.probes.Started(pod.UID, spec.Name))
		}
		return cs
	}
	s.InitContainerStatuses = nil
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		cs := statusOf(spec)
		if !isSidecar(spec) { // a regular init container is ready once it has succeeded
			cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		}
		s.InitContainerStatuses = append(s.InitContainerStatuses, cs)
	}
	s.ContainerStatuses = make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, statusOf(&pod.Spec.Containers[i]))
	}
	s.EphemeralContainerStatuses = ephemeralStatuses(pod, all, st.waiting)
	uninitialized := incompleteInitContainers(pod, s.InitContainerStatuses, s.ContainerStatuses)
	if len(uninitialized) > 0 { // what has not started yet waits for the init containers
		for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
			for i := range list {
				if w := list[i].State.Waiting; w != nil && w.Reason == reasonContainerCreating {
					list[i].State.Waiting = &corev1.ContainerStateWaiting{Reason: reasonPodInitializing}
				}
			}
		}
	}
	s.Phase = podPhase(pod.Spec.RestartPolicy, s.ContainerStatuses)
	switch {
	case initFailed(pod, s.InitContainerStatuses):
		s.Phase = corev1.PodFailed
	case len(uninitialized) > 0:
		s.Phase = corev1.PodPending
	}
	s.Reason, s.Message = "", ""
	if st.lastStatus != nil {
		// The pod as given may predate our last write (the informer lags):
		// start the conditions we own from what we wrote, for their times.
		for _, c := range st.lastStatus.Conditions {
			if ownedConditions.Has(c.Type) {
				setPodCondition(&s, c, c.LastTransitionTime)
			}
		}
	}
	a.setPodConditions(&s, sandboxReady, uninitialized, pod.Spec.ReadinessGates)
	return s
}

// kubeletConditions are the pod conditions the kubelet sets, in the order it writes
// them (after the conditions others own), as `kubectl describe pod` lists them.
var kubeletConditions = []corev1.PodConditionType{
	corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled,
}

// ownedConditions are kubeletConditions as a set.
var ownedConditions = sets.New(kubeletConditions...)

// inKubeletOrder puts the conditions others own first, as they are, then ours in
// kubeletConditions' order: the order of the kubelet's status merge.
func inKubeletOrder(conds []corev1.PodCondition) []corev1.PodCondition {
	out := make([]corev1.PodCondition, 0, len(conds))
	for _, c := range conds {
		if !ownedConditions.Has(c.Type) {
			out = append(out, c)
		}
	}
	for _, t := range kubeletConditions {
		for _, c := range conds {
			if c.Type == t {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// containerStatus reports one container from its runtime history (newest first).
func containerStatus(spec *corev1.Container, history []runtime.Container, waiting *corev1.ContainerStateWaiting, restarts int32) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: spec.Name, Image: spec.Image, RestartCount: restarts, Started: ptr.To(false)}
	if len(history) == 0 || history[0].State == runtime.StateCreated || history[0].State == runtime.StateUnknown {
		if waiting == nil {
			waiting = &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}
		}
		cs.State.Waiting = waiting
		return cs
	}
	cur := history[0]
	cs.ContainerID = runtime.StatusID(cur.ID)
	cs.ImageID = cur.ImageRef
	if cs.ImageID == "" { // made by an older minilet
		cs.ImageID = cur.Image
	}
	if len(history) > 1 && (history[1].State == runtime.StateExited || history[1].State == runtime.StateUnknown) {
		cs.LastTerminationState.Terminated = terminatedState(spec, history[1])
	}
	switch {
	case isRunning(cur):
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: apiTime(cur.StartedAt)}
		cs.Ready, cs.Started = true, ptr.To(true)
	case waiting != nil: // exited, and held back from restarting
		cs.State.Waiting = waiting
		cs.LastTerminationState.Terminated = terminatedState(spec, cur)
	default:
		cs.State.Terminated = terminatedState(spec, cur)
	}
	return cs
}

// unknownExitCode is containerd CRI's exit code of a container whose exit was not seen.
const unknownExitCode = 255

func terminatedState(spec *corev1.Container, c runtime.Container) *corev1.ContainerStateTerminated {
	reason, message := "Completed", terminationMessage(spec, c)
	switch {
	case c.State == runtime.StateUnknown:
		// Its task went without an exit on record (a node outage): containerd's CRI
		// reports such a container exited with 255, reason Unknown.
		reason, c.ExitCode = "Unknown", unknownExitCode
	case c.StartError != "":
		// CRI reports a start time of 0 (Unix) for a container that never started.
		reason, message, c.StartedAt = "StartError", c.StartError, time.Unix(0, 0)
	case c.OOMKilled:
		reason = "OOMKilled"
	case c.ExitCode != 0:
		reason = "Error"
	}
	return &corev1.ContainerStateTerminated{
		ExitCode:    c.ExitCode,
		Reason:      reason,
		Message:     message,
		StartedAt:   apiTime(c.StartedAt),
		FinishedAt:  apiTime(c.FinishedAt),
		ContainerID: runtime.StatusID(c.ID),
	}
}

// podPhase is the kubelet's getPhase for a pod without init containers.
func podPhase(policy corev1.RestartPolicy, statuses []corev1.ContainerStatus) corev1.PodPhase {
	var running, waiting, stopped, succeeded int
	for _, cs := range statuses {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.LastTerminationState.Terminated != nil: // waiting to restart
			stopped++
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0 || len(statuses) == 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case policy == corev1.RestartPolicyAlways:
		return corev1.PodRunning // all exited, restarting
	case stopped == succeeded:
		return corev1.PodSucceeded
	case policy == corev1.RestartPolicyNever:
		return corev1.PodFailed
	default:
		return corev1.PodRunning // OnFailure: failed ones restart
	}
}

// setPodConditions sets the conditions the kubelet owns; each keeps its
// lastTransitionTime while its status stays the same.
func (a *Agent) setPodConditions(s *corev1.PodStatus, sandboxReady bool, uninitialized []string, gates []corev1.PodReadinessGate) {
	var unready []string
	for _, cs := range s.ContainerStatuses {
		if !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	for _, cs := range s.InitContainerStatuses { // sidecars count for readiness
		if cs.State.Running != nil && !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	containersReady := corev1.PodCondition{Status: corev1.ConditionTrue}
	switch {
	case s.Phase == corev1.PodSucceeded:
		containersReady = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "PodCompleted"}
	case len(unready) > 0:
		containersReady = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
			Message: fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))}
	}
	ready := containersReady
	if unmet := unmetReadinessGates(s, gates); ready.Status == corev1.ConditionTrue && len(unmet) > 0 {
		ready = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady", Message: strings.Join(unmet, ", ")}
	}
	sandbox := corev1.ConditionFalse
	if sandboxReady {
		sandbox = corev1.ConditionTrue
	}
	now := apiTime(a.clock.Now())
	set := func(typ corev1.PodConditionType, c corev1.PodCondition) {
		c.Type = typ
		setPodCondition(s, c, now)
	}
	set(corev1.PodReadyToStartContainers, corev1.PodCondition{Status: sandbox})
	initialized := corev1.PodCondition{Status: corev1.ConditionTrue}
	if len(uninitialized) > 0 {
		initialized = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized",
			Message: fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(uninitialized, " "))}
	}
	set(corev1.PodInitialized, initialized)
	set(corev1.PodReady, ready)
	set(corev1.ContainersReady, containersReady)
	if podCondition(s, corev1.PodScheduled) == nil {
		set(corev1.PodScheduled, corev1.PodCondition{Status: corev1.ConditionTrue})
	}
	s.Conditions = inKubeletOrder(s.Conditions)
}

// unmetReadinessGates says, in the kubelet's words, which of the pod's readiness gates
// (conditions other controllers set) are not True.
func unmetReadinessGates(s *corev1.PodStatus, gates []corev1.PodReadinessGate) []string {
	var unmet []string
	for _, g := range gates {
		c := podCondition(s, g.ConditionType)
		switch {
		case c == nil:
			unmet = append(unmet, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case c.Status != corev1.ConditionTrue:
			unmet = append(unmet, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, c.Status))
		}
	}
	return unmet
}

// setPodCondition sets c in s; its transition time is now unless the
// condition already had c's status.
func setPodCondition(s *corev1.PodStatus, c corev1.PodCondition, now metav1.Time) {
	c.LastTransitionTime = now
	if old := podCondition(s, c.Type); old != nil {
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return
	}
	s.Conditions = append(s.Conditions, c)
}

func podCondition(s *corev1.PodStatus, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == typ {
			return &s.Conditions[i]
		}
	}
	return nil
}

// apiTime is t as the API stores it (whole seconds), so a status read back
// compares equal to the one computed.
func apiTime(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t).Rfc3339Copy()
}

func isTerminal(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}
