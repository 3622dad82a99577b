package podsync

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// Allocation, as the kubelet's allocation manager: the resources the node granted each
// pod's running containers and the pod itself (its pod-level spec.resources). A pod's
// spec is granted when it starts; a resize of it (pods/resize) is granted only if the node holds the pod's new requests beside the other
// pods' granted ones. Until then the pod keeps running with what it was granted and
// reports PodResizePending with reason Deferred and the admission's words ("Node didn't
// have enough resource: cpu, ..."); it is asked again every resizeRetry and whenever the
// pod is synced, so a resize goes through once other pods free what it needs.

// resizeRetry is how often a deferred resize is tried again.
const resizeRetry = 5 * time.Second

// Fits tells whether the node holds pod (with the resources of its spec) beside the other
// pods it runs, with the reason and words of the kubelet's admission when it does not.
type Fits func(pod *corev1.Pod) (ok bool, reason, message string)

// grant is what the node granted a pod: its containers' resources, by container name,
// and its pod-level resources (spec.resources; nil when it has none), as the kubelet's
// PodResourceInfo with InPlacePodLevelResourcesVerticalScaling.
type grant struct {
	containers map[string]corev1.ResourceRequirements
	pod        *corev1.ResourceRequirements
}

// allocations are the grants of each pod. The agent reads them (AllocatedPod) while pod
// workers write them.
type allocations struct {
	mu   sync.Mutex
	pods map[types.UID]grant
}

func (a *allocations) get(uid types.UID) (grant, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	granted, ok := a.pods[uid]
	return granted, ok
}

func (a *allocations) set(uid types.UID, granted grant) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pods == nil {
		a.pods = map[types.UID]grant{}
	}
	a.pods[uid] = granted
}

func (a *allocations) forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pods, uid)
}

// resizePending is a resize the node could not grant yet.
type resizePending struct {
	reason, message string
	generation      int64 // the pod's, when it was deferred
}

// AllocatedPod is pod as the node granted it: its containers with the resources they were
// granted where a resize of them is pending; pod itself otherwise.
func (s *Syncer) AllocatedPod(pod *corev1.Pod) *corev1.Pod {
	granted, ok := s.allocated.get(pod.UID)
	if !ok {
		return pod
	}
	return withGranted(pod, granted)
}

// allocate grants pod's spec if it is new, unchanged, or a resize that fits, and returns
// the pod to sync: pod itself, or, while its resize is deferred, pod with the resources
// granted before.
func (s *Syncer) allocate(st *PodState, pod *corev1.Pod, all []runtime.Container) *corev1.Pod {
	granted, known := s.allocated.get(pod.UID)
	if !known {
		// New to this minilet: what its running containers were given (a restarted
		// minilet), else its spec.
		granted = specResources(pod)
		for _, spec := range resizableContainers(pod) {
			if history := containersNamed(all, spec.Name); len(history) > 0 && history[0].State == runtime.StateRunning {
				if applied, ok := appliedResources(history[0]); ok {
					granted.containers[spec.Name] = applied
				}
			}
		}
	}
	running := withGranted(pod, granted)
	if running == pod {
		s.allocated.set(pod.UID, granted)
		st.resizePending = nil
		return pod
	}
	ok, message := true, ""
	if s.fits != nil {
		ok, _, message = s.fits(pod)
	}
	if ok {
		s.allocated.set(pod.UID, specResources(pod))
		st.resizePending = nil
		st.resizeStarted = true
		st.resizeGeneration = pod.Generation // a new resize: its generation, as the kubelet clears and sets the condition
		s.podEvent(pod, corev1.EventTypeNormal, "ResizeStarted", "%s", resizeMessage(pod, "Pod resize started", ""))
		return pod
	}
	s.allocated.set(pod.UID, granted)
	if st.resizePending == nil || st.resizePending.message != message || st.resizePending.generation != pod.Generation {
		s.podEvent(pod, corev1.EventTypeWarning, "ResizeDeferred", "%s", resizeMessage(pod, "Pod resize Deferred", message))
	}
	st.resizePending = &resizePending{reason: corev1.PodReasonDeferred, message: message, generation: pod.Generation}
	return running
}

// resizeMessage is the message of a resize event, as the kubelet's podResizeMessage: a
// prefix, then the resources pod's spec asks for, its generation and an error, in JSON.
func resizeMessage(pod *corev1.Pod, prefix, errorMessage string) string {
	type containerAllocation struct {
		Name      string                      `json:"name"`
		Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	}
	summary := struct {
		InitContainers []containerAllocation `json:"initContainers,omitempty"`
		Containers     []containerAllocation `json:"containers,omitempty"`
		Generation     int64                 `json:"generation"`
		Error          string                `json:"error,omitempty"`
	}{Generation: pod.Generation, Error: errorMessage}
	for _, c := range pod.Spec.InitContainers {
		summary.InitContainers = append(summary.InitContainers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		summary.Containers = append(summary.Containers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	data, err := json.Marshal(summary)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(data)
}

// specResources are the resources pod's spec asks for.
func specResources(pod *corev1.Pod) grant {
	out := grant{containers: map[string]corev1.ResourceRequirements{}, pod: pod.Spec.Resources.DeepCopy()}
	for _, c := range resizableContainers(pod) {
		out.containers[c.Name] = c.Resources
	}
	return out
}

// withGranted is pod with its pod-level and containers' resources as granted, a copy
// where they differ from its spec, else pod itself.
func withGranted(pod *corev1.Pod, granted grant) *corev1.Pod {
	differs := func(c *corev1.Container) bool {
		r, ok := granted.containers[c.Name]
		return ok && !equality.Semantic.DeepEqual(r, c.Resources)
	}
	podLevelDiffers := !equality.Semantic.DeepEqual(granted.pod, pod.Spec.Resources)
	if !podLevelDiffers && !slices.ContainsFunc(resizableContainers(pod), differs) {
		return pod
	}
	out := pod.DeepCopy()
	out.Spec.Resources = granted.pod.DeepCopy()
	for _, c := range resizableContainers(out) {
		if r, ok := granted.containers[c.Name]; ok {
			c.Resources = *r.DeepCopy()
		}
	}
	return out
}
