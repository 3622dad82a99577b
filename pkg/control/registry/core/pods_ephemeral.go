package core

import (
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Ephemeral containers are added to a running pod through its ephemeralcontainers
// subresource only (kubectl debug patches it), as kube-apiserver's
// podEphemeralContainersStrategy: the update keeps everything of the stored pod but
// spec.ephemeralContainers, and those may only grow.
var podEphemeralContainersUpdate = registry.SubresourceRules{
	Prepare: func(obj, old runtime.Object) {
		pod, o := obj.(*corev1.Pod), old.(*corev1.Pod)
		added := pod.Spec.EphemeralContainers
		o = o.DeepCopy()
		pod.Spec, pod.Status = o.Spec, o.Status
		pod.Spec.EphemeralContainers = added
		// The metadata a status write may not change may not change here either.
		pod.Labels, pod.Annotations, pod.OwnerReferences, pod.Finalizers = o.Labels, o.Annotations, o.OwnerReferences, o.Finalizers
	},
	Validate: func(obj, old runtime.Object) field.ErrorList {
		return validateEphemeralContainersUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
	},
}

// validateEphemeralContainersUpdate is kube-apiserver's ValidatePodEphemeralContainersUpdate:
// the pod stays valid, a static pod's mirror takes none, and the ones there stay as they are.
func validateEphemeralContainersUpdate(p, old *corev1.Pod) field.ErrorList {
	if _, mirror := old.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	errs := validatePod(p)
	path := field.NewPath("spec", "ephemeralContainers")
	byName := make(map[string]*corev1.EphemeralContainer, len(p.Spec.EphemeralContainers))
	for i := range p.Spec.EphemeralContainers {
		byName[p.Spec.EphemeralContainers[i].Name] = &p.Spec.EphemeralContainers[i]
	}
	for _, was := range old.Spec.EphemeralContainers {
		now, ok := byName[was.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", was.Name)))
		case !equality.Semantic.DeepEqual(was, *now):
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be changed\n", was.Name)))
		}
	}
	return errs
}
