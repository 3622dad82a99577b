package registry

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Ephemeral containers are added to a running pod through its ephemeralcontainers
// subresource only (kubectl debug patches it), as kube-apiserver's
// podEphemeralContainersStrategy: the update keeps everything of the stored pod but
// spec.ephemeralContainers, and those may only grow.
var podEphemeralContainersUpdate = SubresourceRules{
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

// validateEphemeralContainers checks a pod's ephemeral containers as kube-apiserver's
// validateEphemeralContainers: names unique across every container of the pod, a target
// among its containers or init containers, and nothing that would make the workload rely
// on them (ports, probes, lifecycle, resources, subPath mounts...). names holds the pod's
// other containers' names.
func validateEphemeralContainers(spec *corev1.PodSpec, path *field.Path, names sets.Set[string]) field.ErrorList {
	ecs, pod := spec.EphemeralContainers, podOfContainers(spec)
	targets := names.Clone()
	var errs field.ErrorList
	for i := range ecs {
		ec := &ecs[i]
		p := path.Index(i)
		c := corev1.Container(ec.EphemeralContainerCommon)
		errs = append(errs, pod.validateContainer(&c, p, names)...)
		errs = append(errs, imageWithoutPadding(&c, p)...)
		if ec.TargetContainerName != "" && !targets.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		errs = append(errs, forbiddenEphemeralFields(&ec.EphemeralContainerCommon, p)...)
		for j, m := range ec.VolumeMounts {
			if m.SubPath != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPath"), ephemeralForbidden))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPathExpr"), ephemeralForbidden))
			}
		}
	}
	return errs
}

const ephemeralForbidden = "cannot be set for an Ephemeral Container"

// allowedEphemeralFields are the fields of a container an ephemeral one may set; as in
// Kubernetes an allow list, so that a field added to the API is refused until considered.
var allowedEphemeralFields = sets.New("Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env",
	"VolumeMounts", "VolumeDevices", "TerminationMessagePath", "TerminationMessagePolicy", "ImagePullPolicy",
	"SecurityContext", "Stdin", "StdinOnce", "TTY")

// forbiddenEphemeralFields names each field outside the allow list that ec sets.
func forbiddenEphemeralFields(ec *corev1.EphemeralContainerCommon, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	v := reflect.ValueOf(ec).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if allowedEphemeralFields.Has(f.Name) || v.Field(i).IsZero() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		errs = append(errs, field.Forbidden(path.Child(name), ephemeralForbidden))
	}
	return errs
}
