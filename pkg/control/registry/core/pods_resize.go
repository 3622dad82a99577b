package core

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/qos"
)

// A running pod's CPU and memory are changed in place through its resize subresource, as
// kube-apiserver's podResizeStrategy: the update keeps everything of the stored pod but
// its containers' resources and resizePolicy and its pod-level resources; the spec change
// counts one more generation, and the node acts on it (in-place pod vertical scaling, GA
// in 1.35; of pod-level resources, InPlacePodLevelResourcesVerticalScaling, and of
// non-sidecar init containers, InPlacePodVerticalScalingInitContainers, both on in 1.36).
var podResizeUpdate = registry.SubresourceRules{
	Prepare: func(obj, old runtime.Object) {
		pod, o := obj.(*corev1.Pod), old.(*corev1.Pod)
		*pod = *dropNonResizeUpdates(pod, o.DeepCopy())
	},
	Validate: func(obj, old runtime.Object) field.ErrorList {
		return validatePodResize(obj.(*corev1.Pod), old.(*corev1.Pod))
	},
}

// dropNonResizeUpdates is kube's: old with new's pod-level resources and the resources
// and resize policies of new's containers. A pod whose containers were added, removed,
// renamed or reordered comes back as sent, for the validation to refuse.
func dropNonResizeUpdates(pod, old *corev1.Pod) *corev1.Pod {
	containers, ok := withResizeFields(pod.Spec.Containers, old.Spec.Containers)
	initContainers, initOK := withResizeFields(pod.Spec.InitContainers, old.Spec.InitContainers)
	if !ok || !initOK {
		return pod
	}
	out, meta := old, old.ObjectMeta
	out.ObjectMeta = *pod.ObjectMeta.DeepCopy() // what may change of it, the generic update checks
	out.Labels, out.Annotations, out.OwnerReferences, out.Finalizers = meta.Labels, meta.Annotations, meta.OwnerReferences, meta.Finalizers
	out.Spec.Containers, out.Spec.InitContainers = containers, initContainers
	out.Spec.Resources = pod.Spec.Resources
	return out
}

// withResizeFields is old with each container's resources and resizePolicy from cs, or
// false when cs are not old's containers in old's order.
func withResizeFields(cs, old []corev1.Container) ([]corev1.Container, bool) {
	if len(cs) != len(old) {
		return nil, false
	}
	out := make([]corev1.Container, len(old))
	for i := range old {
		if cs[i].Name != old[i].Name {
			return nil, false
		}
		out[i] = old[i]
		out[i].Resources, out[i].ResizePolicy = cs[i].Resources, cs[i].ResizePolicy
	}
	return out, true
}

// validatePodResize is kube-apiserver's ValidatePodResize: the pod stays valid, keeps its
// QoS class and its containers (names and order), no request or limit (of a container or
// of the pod) goes away, and only CPU and memory change.
func validatePodResize(p, old *corev1.Pod) field.ErrorList {
	if _, mirror := old.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if old.Spec.OS != nil && old.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}
	errs := validatePod(p)
	spec := field.NewPath("spec")
	oldClass := old.Status.QOSClass
	if oldClass == "" {
		oldClass = qos.Class(old)
	}
	if oldClass != qos.Class(p) {
		errs = append(errs, field.Invalid(spec, p.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !resizeSupported(old) {
		errs = append(errs, field.Forbidden(spec, "Pod running on node without support for resize"))
	}
	// Put back the old CPU and memory: what differs then is a change resize may not make.
	masked := p.Spec.DeepCopy()
	if hasPodLevelResources(old) || hasPodLevelResources(p) {
		errs = append(errs, validatePodLevelResourcesResize(p.Spec.Resources, old.Spec.Resources, spec)...)
		masked.Resources = podLevelWithCPUMemoryOf(masked.Resources, old.Spec.Resources)
	}
	if order := validateResizeOrder(p, old, spec); len(order) > 0 {
		return append(errs, order...)
	}
	for i := range old.Spec.Containers {
		errs = append(errs, validateContainerResize(&p.Spec.Containers[i].Resources, &old.Spec.Containers[i].Resources, spec.Child("containers").Index(i).Child("resources"))...)
	}
	for i := range old.Spec.InitContainers {
		errs = append(errs, validateContainerResize(&p.Spec.InitContainers[i].Resources, &old.Spec.InitContainers[i].Resources, spec.Child("initContainers").Index(i).Child("resources"))...)
	}
	for i := range masked.Containers {
		keepCPUMemory(&masked.Containers[i], &old.Spec.Containers[i])
		if !equality.Semantic.DeepEqual(masked.Containers[i], old.Spec.Containers[i]) {
			errs = append(errs, field.Forbidden(spec, "only cpu and memory resources are mutable"))
		}
	}
	for i := range masked.InitContainers {
		errs = append(errs, maskInitContainerResize(&masked.InitContainers[i], &old.Spec.InitContainers[i], spec.Child("initContainers").Index(i))...)
	}
	if len(errs) > 0 {
		return errs
	}
	if !equality.Semantic.DeepEqual(*masked, old.Spec) {
		errs = append(errs, field.Forbidden(spec, "only cpu and memory resources are mutable"))
	}
	return errs
}

// maskInitContainerResize puts back an init container's old CPU and memory in c, refusing
// any other change of it. A non-sidecar one is resized too (kube 1.36's
// InPlacePodVerticalScalingInitContainers), unless it has a RestartContainer policy.
func maskInitContainerResize(c, old *corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	changed := !equality.Semantic.DeepEqual(*c, *old)
	keepCPUMemory(c, old)
	if !equality.Semantic.DeepEqual(*c, *old) {
		errs = append(errs, field.Forbidden(path, "only cpu and memory resources for init or sidecar containers are mutable"))
	}
	if changed && !isSidecar(c) && hasRestartContainerPolicy(c) {
		errs = append(errs, field.Forbidden(path, "non-sidecar init containers with a resize policy of RestartContainer cannot be resized"))
	}
	return errs
}

func hasRestartContainerPolicy(c *corev1.Container) bool {
	for _, p := range c.ResizePolicy {
		if p.RestartPolicy == corev1.RestartContainer {
			return true
		}
	}
	return false
}

// resizeSupported is kube's version-skew check: a node that reports no resources for a
// running container cannot resize it. A pod with nothing running yet may be resized.
func resizeSupported(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil {
			return c.Resources != nil
		}
	}
	return true
}

func hasPodLevelResources(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	return r != nil && len(r.Requests)+len(r.Limits) > 0
}

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// validateResizeOrder refuses containers added, removed, renamed or reordered.
func validateResizeOrder(p, old *corev1.Pod, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name     string
		cs, olds []corev1.Container
	}{{"containers", p.Spec.Containers, old.Spec.Containers}, {"initContainers", p.Spec.InitContainers, old.Spec.InitContainers}} {
		if len(list.cs) != len(list.olds) {
			errs = append(errs, field.Forbidden(spec.Child(list.name), list.name+" may not be added or removed on resize"))
			continue
		}
		for i := range list.olds {
			if list.cs[i].Name != list.olds[i].Name {
				errs = append(errs, field.Forbidden(spec.Child(list.name).Index(i).Child("name"), list.name+" may not be renamed or reordered on resize"))
			}
		}
	}
	return errs
}

// validateContainerResize: requests and limits may change, not go away.
func validateContainerResize(r, old *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if resourcesRemoved(r.Requests, old.Requests) {
		errs = append(errs, field.Forbidden(path.Child("requests"), "resource requests cannot be removed"))
	}
	if resourcesRemoved(r.Limits, old.Limits) {
		errs = append(errs, field.Forbidden(path.Child("limits"), "resource limits cannot be removed"))
	}
	return errs
}

func resourcesRemoved(list, old corev1.ResourceList) bool {
	for name := range old {
		if _, ok := list[name]; !ok {
			return true
		}
	}
	return false
}

// validatePodLevelResourcesResize is kube's: pod-level resources, their requests and
// their limits may change, not go away, and only in CPU and memory. Pod-level resources
// may come to a pod without them (the QoS class check still applies).
func validatePodLevelResourcesResize(r, old *corev1.ResourceRequirements, spec *field.Path) field.ErrorList {
	if old != nil && r == nil {
		return field.ErrorList{field.Forbidden(spec.Child("resources"), "pod-level resources cannot be removed")}
	}
	var errs field.ErrorList
	if old != nil {
		if resourcesRemoved(r.Requests, old.Requests) {
			errs = append(errs, field.Forbidden(spec.Child("resources", "requests"), "pod-level resource requests cannot be removed"))
		}
		if resourcesRemoved(r.Limits, old.Limits) {
			errs = append(errs, field.Forbidden(spec.Child("resources", "limits"), "pod-level resource limits cannot be removed"))
		}
	}
	if !equality.Semantic.DeepEqual(podLevelWithCPUMemoryOf(r, old), old) {
		errs = append(errs, field.Forbidden(spec, "only cpu and memory resources are mutable at pod-level"))
	}
	return errs
}

// podLevelWithCPUMemoryOf is r with old's CPU and memory requests and limits; nil when
// that leaves nothing and old had no pod-level resources (kube's
// dropCPUMemoryResourceRequirementsUpdates).
func podLevelWithCPUMemoryOf(r, old *corev1.ResourceRequirements) *corev1.ResourceRequirements {
	if r == nil {
		return nil
	}
	var oldRequests, oldLimits corev1.ResourceList
	if old != nil {
		oldRequests, oldLimits = old.Requests, old.Limits
	}
	out := r.DeepCopy()
	out.Requests = withCPUMemoryOf(r.Requests, oldRequests)
	out.Limits = withCPUMemoryOf(r.Limits, oldLimits)
	if old == nil && len(out.Requests)+len(out.Limits)+len(out.Claims) == 0 {
		return nil
	}
	return out
}

// keepCPUMemory sets c's CPU and memory requests and limits to old's, leaving the rest.
func keepCPUMemory(c, old *corev1.Container) {
	c.Resources.Limits = withCPUMemoryOf(c.Resources.Limits, old.Resources.Limits)
	c.Resources.Requests = withCPUMemoryOf(c.Resources.Requests, old.Resources.Requests)
}

func withCPUMemoryOf(list, old corev1.ResourceList) corev1.ResourceList {
	if list == nil && old == nil {
		return nil
	}
	out := list.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		delete(out, name)
		if q, ok := old[name]; ok {
			out[name] = q
		}
	}
	return out
}
