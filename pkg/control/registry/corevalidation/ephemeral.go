package corevalidation

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateEphemeralContainers checks a pod's ephemeral containers as kube-apiserver's
// validateEphemeralContainers: names unique across every container of the pod, a target
// among its containers or init containers, and nothing that would make the workload rely
// on them (ports, probes, lifecycle, resources, subPath mounts...). names holds the pod's
// other containers' names.
func ValidateEphemeralContainers(spec *corev1.PodSpec, path *field.Path, names sets.Set[string]) field.ErrorList {
	ecs, pod := spec.EphemeralContainers, podOfContainers(spec)
	targets := names.Clone()
	var errs field.ErrorList
	for i := range ecs {
		ec := &ecs[i]
		p := path.Index(i)
		c := corev1.Container(ec.EphemeralContainerCommon)
		errs = append(errs, pod.validateContainer(&c, p, names)...)
		errs = append(errs, ImageWithoutPadding(&c, p)...)
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
