package podsync

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/agent/status"
	"github.com/minik8s/minik8s/pkg/qos"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// podStatus computes a pod's status from its runtime containers, the way the
// kubelet's generateAPIPodStatus does. Fields minilet does not own (other
// writers' conditions, nominatedNodeName, qosClass) are kept.
func (s *Syncer) podStatus(st *PodState, pod *corev1.Pod, all []runtime.Container, sandboxReady bool) corev1.PodStatus {
	ps := *pod.Status.DeepCopy()
	// The generation of the spec this status reflects, as the kubelet reports it.
	ps.ObservedGeneration = pod.Generation
	ps.HostIP = s.cfg.NodeIP
	if ps.QOSClass == "" { // set by the API server at create; static pods come without
		ps.QOSClass = qos.Class(pod)
	}
	ps.HostIPs = []corev1.HostIP{{IP: s.cfg.NodeIP}}
	if st.podIP != nil {
		ps.PodIP = st.podIP.String()
		ps.PodIPs = []corev1.PodIP{{IP: ps.PodIP}}
	}
	startTime := st.startTime
	ps.StartTime = &startTime
	// What the node allocated to the whole pod, as the scheduler counts it (the 1.36 kubelet's,
	// with InPlacePodLevelResourcesVerticalScaling).
	ps.AllocatedResources = resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	previous := pod.Status
	if st.lastStatus != nil {
		previous = *st.lastStatus
	}
	ps.Resources = s.podLevelResourcesStatus(pod, previous)
	statusOf := func(spec *corev1.Container, restarts restartCheck) corev1.ContainerStatus {
		history := containersNamed(all, spec.Name)
		// A finished pod's container removed since (disk reclaimed) keeps the state it
		// ended in, as the kubelet keeps an old Terminated status the runtime no longer has.
		if len(history) == 0 && IsTerminal(previous.Phase) {
			if old := namedStatus(previous, spec.Name); old != nil && old.State.Terminated != nil {
				return *old.DeepCopy()
			}
		}
		// Why a container waits is told only of one that will run again: one that exited
		// for good (a failed start under restartPolicy Never) stays terminated, as the
		// kubelet reads its reason cache only for what ShouldContainerBeRestarted keeps.
		var waiting *corev1.ContainerStateWaiting
		if w, ok := st.waiting[spec.Name]; ok && (len(history) == 0 || history[0].State != runtime.StateExited || restarts(history[0].ExitCode)) {
			waiting = &w
		}
		cs := containerStatus(spec, history, waiting, st.restartCounts[spec.Name], st.terminationLogs)
		if cs.LastTerminationState.Terminated == nil {
			cs.LastTerminationState.Terminated = st.carriedLastState(spec.Name, history)
		}
		var cur *runtime.Container
		if len(history) > 0 {
			cur = &history[0]
		}
		withResources(&cs, spec, cur)
		if cs.State.Running != nil { // probes decide readiness
			cs.Ready = s.probes.Ready(pod.UID, spec)
			cs.Started = ptr.To(s.probes.Started(pod.UID, spec.Name))
		}
		return cs
	}
	ps.InitContainerStatuses = nil
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		cs := statusOf(spec, initRestarts(pod, spec))
		if !status.IsSidecar(spec) { // a regular init container is ready once it has succeeded
			cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		}
		ps.InitContainerStatuses = append(ps.InitContainerStatuses, cs)
	}
	ps.ContainerStatuses = make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		ps.ContainerStatuses = append(ps.ContainerStatuses, statusOf(&pod.Spec.Containers[i], appRestarts(pod, &pod.Spec.Containers[i])))
	}
	ps.EphemeralContainerStatuses = ephemeralStatuses(pod, all, st.waiting, st.terminationLogs)
	// Sorted by name, init containers' kept in the spec's order, as the kubelet's
	// convertToAPIContainerStatuses writes them.
	byName := func(a, b corev1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(ps.ContainerStatuses, byName)
	slices.SortFunc(ps.EphemeralContainerStatuses, byName)
	uninitialized := incompleteInitContainers(pod, ps.InitContainerStatuses, ps.ContainerStatuses)
	// What a pod with init containers has not made yet waits for them (the kubelet's default
	// waiting state), even once initialized.
	if len(pod.Spec.InitContainers) > 0 {
		for _, list := range [][]corev1.ContainerStatus{ps.InitContainerStatuses, ps.ContainerStatuses} {
			for i := range list {
				if w := list[i].State.Waiting; w != nil && w.Reason == reasonContainerCreating {
					list[i].State.Waiting = &corev1.ContainerStateWaiting{Reason: reasonPodInitializing}
				}
			}
		}
	}
	ps.Phase = status.Phase(&pod.Spec, ps.InitContainerStatuses, ps.ContainerStatuses, false)
	switch {
	case initFailed(pod, ps.InitContainerStatuses):
		ps.Phase = corev1.PodFailed
	case len(uninitialized) > 0, initPending(pod, ps.InitContainerStatuses):
		ps.Phase = corev1.PodPending
	}
	// A pod never leaves a terminal phase, as the kubelet's three-way merge of the phase it
	// last wrote, the API's and the one computed.
	if !IsTerminal(ps.Phase) {
		for _, was := range []corev1.PodPhase{previous.Phase, pod.Status.Phase} {
			if IsTerminal(was) {
				ps.Phase = was
				break
			}
		}
	}
	ps.Reason, ps.Message = "", ""
	if st.lastStatus != nil {
		// The pod as given may predate our last write (the informer lags):
		// start the conditions we own from what we wrote, for their times.
		for _, c := range st.lastStatus.Conditions {
			if status.Owned.Has(c.Type) {
				status.SetCondition(&ps, c, c.LastTransitionTime)
			}
		}
	}
	setResizeConditions(&ps, st.resizePending, st.resizeGeneration, st.resizeErr, apiTime(s.clock.Now()))
	status.SetConditions(&ps, apiTime(s.clock.Now()), pod.Generation, sandboxReady, uninitialized, &pod.Spec)
	if cond, ok := allContainersRestarting(pod, ps.Phase); ok {
		status.SetCondition(&ps, cond, apiTime(s.clock.Now()))
	}
	return ps
}

// namedStatus is the status of the init or app container name in ps, nil when none.
func namedStatus(ps corev1.PodStatus, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{ps.InitContainerStatuses, ps.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// containerStatus reports one container from its runtime history (newest first).
func containerStatus(spec *corev1.Container, history []runtime.Container, waiting *corev1.ContainerStateWaiting, restarts int32, logs terminationLogs) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: spec.Name, Image: spec.Image, RestartCount: restarts, Started: ptr.To(false),
		VolumeMounts: volumeMountStatuses(spec.VolumeMounts)}
	if len(history) == 0 || history[0].State == runtime.StateCreated || history[0].State == runtime.StateUnknown {
		if waiting == nil {
			waiting = &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}
		}
		cs.State.Waiting = waiting
		return cs
	}
	cur := history[0]
	cs.ContainerID = runtime.StatusID(cur.ID)
	if u := runtime.ParseUser(cur.User); u != nil { // what CRI's status reports, as the kubelet copies it
		cs.User = &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: u.UID, GID: u.GID, SupplementalGroups: u.SupplementalGroups}}
	}
	cs.ImageID = cur.ImageRef
	if cs.ImageID == "" { // made by an older minilet
		cs.ImageID = cur.Image
	}
	if len(history) > 1 && (history[1].State == runtime.StateExited || history[1].State == runtime.StateUnknown) {
		cs.LastTerminationState.Terminated = terminatedState(spec, history[1], logs)
	}
	switch {
	case isRunning(cur):
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: apiTime(cur.StartedAt)}
		cs.Ready, cs.Started = true, ptr.To(true)
	case waiting != nil: // exited, and held back from restarting
		cs.State.Waiting = waiting
		cs.LastTerminationState.Terminated = terminatedState(spec, cur, logs)
	default:
		cs.State.Terminated = terminatedState(spec, cur, logs)
	}
	return cs
}

// volumeMountStatuses are a container's mounts as its status lists them (the kubelet's
// convertToAPIContainerStatuses): a read-only one is not recursively so, as minilet makes no
// recursive read-only mounts (a runtime without them, to the kubelet).
func volumeMountStatuses(mounts []corev1.VolumeMount) []corev1.VolumeMountStatus {
	var out []corev1.VolumeMountStatus
	for _, m := range mounts {
		vs := corev1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			vs.RecursiveReadOnly = ptr.To(corev1.RecursiveReadOnlyDisabled)
		}
		out = append(out, vs)
	}
	return out
}

// unknownExitCode is containerd CRI's exit code of a container whose exit was not seen.
const unknownExitCode = 255

func terminatedState(spec *corev1.Container, c runtime.Container, logs terminationLogs) *corev1.ContainerStateTerminated {
	reason, message := "Completed", terminationMessage(spec, c, logs)
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

// apiTime is t as the API stores it (whole seconds), so a status read back
// compares equal to the one computed.
func apiTime(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t).Rfc3339Copy()
}

// IsTerminal: a pod in this phase has finished and runs no more.
func IsTerminal(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// writeStatus writes a pod's status through the status writer, remembering what it wrote.
func (s *Syncer) writeStatus(ctx context.Context, st *PodState, pod *corev1.Pod, ps corev1.PodStatus) error {
	var err error
	st.lastStatus, err = s.statuses.Update(ctx, pod, ps, st.lastStatus)
	return err
}

// podLevelResourcesStatus is the pod's status.resources, as the kubelet's
// convertToAPIPodLevelResourcesStatus: of a pod not running yet, what it was allocated
// (its pod-level resources, requests and limits as the scheduler counts them); of a
// running one, its pod-level resources with the CPU request and limit and the memory
// limit its cgroup is set to, a value the cgroup does not give kept from the previous
// status.
func (s *Syncer) podLevelResourcesStatus(pod *corev1.Pod, previous corev1.PodStatus) *corev1.ResourceRequirements {
	out := pod.Spec.Resources.DeepCopy()
	if out == nil {
		out = &corev1.ResourceRequirements{}
	}
	if pod.Status.Phase != corev1.PodRunning {
		out.Requests = resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		out.Limits = resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
		return out
	}
	if out.Requests == nil {
		out.Requests = corev1.ResourceList{}
	}
	if out.Limits == nil {
		out.Limits = corev1.ResourceList{}
	}
	old := previous.Resources
	if previous.Phase != corev1.PodRunning || old == nil {
		old = &corev1.ResourceRequirements{}
	}
	// A cgroup that cannot be read gives nothing: the previous values stay.
	actual, _ := cm.ReadPodCgroup(s.cfg.CgroupRoot, pod)
	keepOrSet := func(list, oldList corev1.ResourceList, name corev1.ResourceName, value *resource.Quantity, floorMilli int64) {
		switch {
		case value == nil:
			if v, ok := oldList[name]; ok {
				list[name] = v.DeepCopy()
			}
		// At or below the smallest value the cgroup holds, the allocated value is told.
		case value.MilliValue() > floorMilli || list.Name(name, "").MilliValue() > floorMilli:
			list[name] = value.DeepCopy()
		}
	}
	keepOrSet(out.Requests, old.Requests, corev1.ResourceCPU, actual.CPURequest, cm.MinShares)
	keepOrSet(out.Limits, old.Limits, corev1.ResourceCPU, actual.CPULimit, cm.MinMilliCPULimit)
	keepOrSet(out.Limits, old.Limits, corev1.ResourceMemory, actual.MemoryLimit, 0)
	if _, ok := out.Requests[corev1.ResourceMemory]; !ok {
		if v, ok := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[corev1.ResourceMemory]; ok {
			out.Requests[corev1.ResourceMemory] = v
		}
	}
	return out
}
