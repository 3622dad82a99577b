package podsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/agent/status"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// In-place resize (a pod's pods/resize subresource changed its containers' CPU or
// memory): a running container whose recorded resources differ from its spec's gets the
// new ones through the runtime, as the kubelet's doPodResizeAction, unless its
// resizePolicy says RestartContainer for a resource that changed (syncContainer restarts
// it then). The status reports what each running container got.

// recordedResources is what minilet records of a container's resources on it
// (runtime.LabelResources): its spec's requests and limits.
func recordedResources(spec *corev1.Container) string {
	data, _ := json.Marshal(spec.Resources) // a ResourceRequirements always marshals
	return string(data)
}

// appliedResources are the resources a runtime container was given, false when it has no
// record of them (made by an older minilet).
func appliedResources(c runtime.Container) (corev1.ResourceRequirements, bool) {
	var r corev1.ResourceRequirements
	if c.Resources == "" || json.Unmarshal([]byte(c.Resources), &r) != nil {
		return corev1.ResourceRequirements{}, false
	}
	return r, true
}

// needsResize: c runs spec's container with other resources than spec's.
func needsResize(c runtime.Container, spec *corev1.Container) bool {
	return c.State == runtime.StateRunning && c.SpecHash == containerHash(spec) && c.Resources != recordedResources(spec)
}

// resizeRestarts: c runs spec's container, and the resize changes a resource of it whose
// resizePolicy is RestartContainer: a request or limit of its own, or a pod-level limit
// it inherits (the kubelet's computePodResizeAction, on limits as GetLimits merges them).
func resizeRestarts(st *PodState, pod *corev1.Pod, c runtime.Container, spec *corev1.Container) bool {
	applied, ok := appliedResources(c)
	if !ok || c.State != runtime.StateRunning || c.SpecHash != containerHash(spec) {
		return false // nothing known to compare: apply in place
	}
	appliedLimits := cm.ContainerLimits(st.actuatedPodResources, &corev1.Container{Resources: applied})
	limits := cm.ContainerLimits(pod.Spec.Resources, spec)
	for _, p := range spec.ResizePolicy {
		if p.RestartPolicy != corev1.RestartContainer {
			continue
		}
		if !equality.Semantic.DeepEqual(applied.Requests[p.ResourceName], spec.Resources.Requests[p.ResourceName]) ||
			!equality.Semantic.DeepEqual(appliedLimits[p.ResourceName], limits[p.ResourceName]) {
			return true
		}
	}
	return false
}

// resizePod applies the new resources of the pod's running containers that take them in
// place, and of the pod itself (pod-level resources, on its cgroup); containers whose
// resizePolicy restarts them, syncContainer restarts. First it writes the pod's status
// with PodResizeInProgress, as the kubelet's SyncPod reports a resize in progress
// (allocated resources not yet actual) before it applies it. A pod memory limit below
// the pod's usage is refused before anything is applied. The pod's cgroup is opened
// then, and finishResize sets it to the pod's new limits once its containers
// are synced: on cgroup v1 a container's CFS quota may not exceed its pod's, whichever way
// each moves.
func (s *Syncer) resizePod(ctx context.Context, st *PodState, apiPod, pod *corev1.Pod, all []runtime.Container) error {
	var resize []*corev1.Container
	var ids []string
	podLevel := podLevelResizes(st, pod)
	st.podCgroupOpen = podLevel
	for _, spec := range resizableContainers(pod) {
		history := containersNamed(all, spec.Name)
		if len(history) == 0 {
			continue
		}
		own := needsResize(history[0], spec)
		if !own && (!podLevel || !inheritsNewLimits(st, pod, spec, history[0])) {
			continue
		}
		st.podCgroupOpen = true
		if !resizeRestarts(st, pod, history[0], spec) {
			resize, ids = append(resize, spec), append(ids, history[0].ID)
		}
	}
	if !st.podCgroupOpen {
		st.resizeErr = nil
		return nil
	}
	if st.resizeGeneration == 0 { // granted before this minilet started
		st.resizeGeneration = pod.Generation
	}
	// The status says how the last try ended until this one has.
	reported := s.writeStatus(ctx, st, apiPod, s.podStatus(st, pod, all, true))
	if err := s.podMemoryDecreaseFits(pod); err != nil {
		st.podCgroupOpen = false
		st.resizeErr = err
		return errors.Join(reported, err)
	}
	errs := []error{cm.OpenPodCgroup(s.cfg.CgroupRoot, pod)}
	if errs[0] == nil {
		for i, spec := range resize {
			errs = append(errs, s.rt.UpdateContainerResources(ctx, ids[i], cm.ContainerResources(pod.Spec.Resources, spec), recordedResources(spec)))
		}
	}
	st.resizeErr = errors.Join(errs...)
	return errors.Join(reported, st.resizeErr)
}

// podLevelResizes: pod's pod-level CPU or memory differ from what its cgroup was last set
// to, as the kubelet's computePodLevelResourcesResizeAction.
func podLevelResizes(st *PodState, pod *corev1.Pod) bool {
	if !st.podResourcesActuated { // adopted by a restarted minilet: its cgroup has what it was granted
		st.actuatedPodResources, st.podResourcesActuated = pod.Spec.Resources.DeepCopy(), true
		return false
	}
	return !cpuMemoryEqual(st.actuatedPodResources, pod.Spec.Resources)
}

// inheritsNewLimits: c runs spec's container, whose cgroup limits it does not set itself
// follow the pod-level ones, and a pod-level resize changes them (the kubelet's
// computePodResizeAction compares them with the pod-level limits applied).
func inheritsNewLimits(st *PodState, pod *corev1.Pod, spec *corev1.Container, c runtime.Container) bool {
	return c.State == runtime.StateRunning && c.SpecHash == containerHash(spec) &&
		!equality.Semantic.DeepEqual(cm.ContainerLimits(st.actuatedPodResources, spec), cm.ContainerLimits(pod.Spec.Resources, spec))
}

// cpuMemoryEqual: a and b request and limit the same CPU and memory (nil: none).
func cpuMemoryEqual(a, b *corev1.ResourceRequirements) bool {
	if a == nil {
		a = &corev1.ResourceRequirements{}
	}
	if b == nil {
		b = &corev1.ResourceRequirements{}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if a.Requests.Name(name, "").Cmp(*b.Requests.Name(name, "")) != 0 ||
			a.Limits.Name(name, "").Cmp(*b.Limits.Name(name, "")) != 0 {
			return false
		}
	}
	return true
}

// podMemoryDecreaseFits refuses a resize that would set the pod cgroup's memory limit
// below what the pod uses, as the kubelet's validateMemoryResizeAction, before anything
// of it is applied.
func (s *Syncer) podMemoryDecreaseFits(pod *corev1.Pod) error {
	desired := cm.PodResources(pod, s.cfg.PodMaxPids).MemoryLimit
	if desired <= 0 {
		return nil
	}
	current, err := cm.ReadPodCgroup(s.cfg.CgroupRoot, pod)
	if err != nil {
		return err
	}
	if current.MemoryLimit != nil && desired >= current.MemoryLimit.Value() {
		return nil
	}
	usage, err := cm.PodMemoryUsage(s.cfg.CgroupRoot, pod)
	if err != nil {
		return fmt.Errorf("unable to read memory usage for pod %q", PodKey(pod))
	}
	if usage >= desired {
		return fmt.Errorf("cannot decrease memory limits: attempting to set pod memory limit (%d) below current usage (%d)", desired, usage)
	}
	return nil
}

// finishResize sets the pod cgroup that resizePod opened to the pod's limits.
func (s *Syncer) finishResize(st *PodState, pod *corev1.Pod) error {
	if !st.podCgroupOpen {
		return nil
	}
	st.podCgroupOpen = false
	if err := cm.EnsurePodCgroup(s.cfg.CgroupRoot, pod, s.cfg.PodMaxPids); err != nil {
		st.resizeErr = errors.Join(st.resizeErr, err)
		return err
	}
	if st.resizeErr == nil { // else the next sync applies it all again
		st.actuatedPodResources = pod.Spec.Resources.DeepCopy()
	}
	return nil
}

// resizeEvents reports the end of a resize as the kubelet does: ResizeCompleted once the
// resize that started is applied, ResizeError (once per error) when applying it failed.
func (s *Syncer) resizeEvents(st *PodState, pod *corev1.Pod) {
	if st.resizeErr != nil {
		if msg := st.resizeErr.Error(); msg != st.resizeErrMessage {
			st.resizeErrMessage = msg
			s.podEvent(pod, corev1.EventTypeWarning, "ResizeError", "%s", resizeMessage(pod, "Pod resize error", msg))
		}
		return
	}
	st.resizeErrMessage = ""
	st.resizeGeneration = 0 // the containers run with what the node granted
	if st.resizeStarted {
		st.resizeStarted = false
		s.podEvent(pod, corev1.EventTypeNormal, "ResizeCompleted", "%s", resizeMessage(pod, "Pod resize completed", ""))
	}
}

// podContainerSpecs are the containers of pod that run alongside each other: sidecars
// and app containers.
func podContainerSpecs(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		if status.IsSidecar(&pod.Spec.InitContainers[i]) {
			out = append(out, &pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// resizableContainers are the containers of pod the node resizes: all of them but
// ephemeral ones, as the 1.36 kubelet's IsResizableContainer with
// InPlacePodVerticalScalingInitContainers (on): non-sidecar init containers too, while
// they run.
func resizableContainers(pod *corev1.Pod) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// withResources adds to cs what the kubelet reports of the resources of a container the
// runtime has (cur; none of one not made yet): the requests it allocated (the spec's), and
// the requests and limits it runs with, the allocated ones when it is not running.
func withResources(cs *corev1.ContainerStatus, spec *corev1.Container, cur *runtime.Container) {
	if cur == nil {
		return
	}
	cs.AllocatedResources = spec.Resources.Requests.DeepCopy()
	resources := *spec.Resources.DeepCopy()
	if applied, ok := appliedResources(*cur); ok && cs.State.Running != nil {
		resources = applied
	}
	resources.Claims = nil
	cs.Resources = &resources
}

// setResizeConditions reports a resize as the kubelet does: one the node cannot grant yet
// as PodResizePending (reason Deferred), one it granted at generation inProgress and is
// applying as PodResizeInProgress (no reason), with reason Error and its words once
// applying it failed; with neither, neither resize condition.
func setResizeConditions(ps *corev1.PodStatus, pending *resizePending, inProgress int64, resizeErr error, now metav1.Time) {
	var conditions []corev1.PodCondition
	if pending != nil {
		conditions = append(conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue,
			Reason: pending.reason, Message: pending.message, ObservedGeneration: pending.generation})
	}
	if inProgress != 0 || resizeErr != nil {
		c := corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, ObservedGeneration: inProgress}
		if resizeErr != nil {
			c.Reason, c.Message = corev1.PodReasonError, resizeErr.Error()
		}
		conditions = append(conditions, c)
	}
	// A condition that says what it said before keeps its times, so an unchanged
	// resize writes no new status.
	for i, c := range conditions {
		conditions[i].LastTransitionTime, conditions[i].LastProbeTime = now, now
		for _, old := range ps.Conditions {
			if old.Type == c.Type && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration {
				conditions[i].LastTransitionTime, conditions[i].LastProbeTime = old.LastTransitionTime, old.LastProbeTime
			}
		}
	}
	ps.Conditions = slices.DeleteFunc(ps.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress
	})
	ps.Conditions = append(ps.Conditions, conditions...)
}
