package corevalidation

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/internal/deletioncost"
	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation/internal/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidatePodSpecificAnnotations is kube's check of the annotations a pod or pod template
// gives meaning to, at path (metadata.annotations of a pod, template.annotations of a
// template): a mirror pod names its node; the alpha tolerations annotation holds valid
// tolerations; the deletion cost is an int32 (unless allowInvalidDeletionCost: an update
// of a pod stored with an invalid one); the deprecated seccomp and AppArmor annotations
// name profiles, and an AppArmor one a container of the pod.
func ValidatePodSpecificAnnotations(annotations map[string]string, spec *corev1.PodSpec, path *field.Path, allowInvalidDeletionCost bool) field.ErrorList {
	var errs field.ErrorList
	if value, mirror := annotations[corev1.MirrorPodAnnotationKey]; mirror && spec.NodeName == "" {
		errs = append(errs, field.Invalid(path.Key(corev1.MirrorPodAnnotationKey), value, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if value := annotations[corev1.TolerationsAnnotationKey]; value != "" {
		var tolerations []core.Toleration // kube's internal type, which its error names
		if err := json.Unmarshal([]byte(value), &tolerations); err != nil {
			errs = append(errs, field.Invalid(path, corev1.TolerationsAnnotationKey, err.Error()))
		} else {
			v1 := make([]corev1.Toleration, len(tolerations))
			for i, t := range tolerations {
				v1[i] = t.V1()
			}
			errs = append(errs, ValidateTolerations(v1, path.Child(corev1.TolerationsAnnotationKey))...)
		}
	}
	if _, err := deletioncost.Of(annotations); err != nil && !allowInvalidDeletionCost {
		errs = append(errs, field.Invalid(path.Key(corev1.PodDeletionCost), annotations[corev1.PodDeletionCost], "must be a 32bit integer"))
	}
	// kube walks the annotations in map order; sorted keys keep our answers the same
	// from one request to the next.
	keys := slices.Sorted(maps.Keys(annotations))
	if p, ok := annotations[corev1.SeccompPodAnnotationKey]; ok {
		errs = append(errs, validateSeccompAnnotation(p, path.Child(corev1.SeccompPodAnnotationKey))...)
	}
	for _, k := range keys {
		if strings.HasPrefix(k, corev1.SeccompContainerAnnotationKeyPrefix) {
			errs = append(errs, validateSeccompAnnotation(annotations[k], path.Child(k))...)
		}
	}
	var containers []PathedContainer // built at the first AppArmor annotation
	for _, k := range keys {
		name, ok := strings.CutPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix)
		if !ok {
			continue
		}
		if containers == nil {
			containers = Containers(spec, path)
		}
		if !slices.ContainsFunc(containers, func(c PathedContainer) bool { return c.Name == name }) {
			errs = append(errs, field.Invalid(path.Key(k), name, "container not found"))
		}
		if p := annotations[k]; !validAppArmorAnnotation(p) {
			errs = append(errs, field.Invalid(path.Key(k), p, fmt.Sprintf("invalid AppArmor profile name: %q", p)))
		}
	}
	return errs
}

// ValidatePodSpecificAnnotationUpdates is kube's: a pod's AppArmor and mirror annotations
// may be neither added, changed nor removed; then, as kube does, the new annotations are
// checked again (a second time in an update, so their errors come twice in its causes).
func ValidatePodSpecificAnnotationUpdates(annotations, old map[string]string, spec *corev1.PodSpec, path *field.Path, allowInvalidDeletionCost bool) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(old)) {
		if value, ok := annotations[k]; ok && value == old[k] {
			continue
		}
		if strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) {
			errs = append(errs, field.Forbidden(path.Key(k), "may not remove or update AppArmor annotations"))
		}
		if k == corev1.MirrorPodAnnotationKey {
			errs = append(errs, field.Forbidden(path.Key(k), "may not remove or update mirror pod annotation"))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		if _, ok := old[k]; ok {
			continue
		}
		if strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) {
			errs = append(errs, field.Forbidden(path.Key(k), "may not add AppArmor annotations"))
		}
		if k == corev1.MirrorPodAnnotationKey {
			errs = append(errs, field.Forbidden(path.Key(k), "may not add mirror pod annotation"))
		}
	}
	return append(errs, ValidatePodSpecificAnnotations(annotations, spec, path, allowInvalidDeletionCost)...)
}

// validateSeccompAnnotation is kube's ValidateSeccompProfile: a deprecated seccomp
// annotation names the runtime's default, unconfined, or a local profile below the
// kubelet's seccomp directory.
func validateSeccompAnnotation(p string, path *field.Path) field.ErrorList {
	switch {
	case p == corev1.SeccompProfileRuntimeDefault, p == corev1.DeprecatedSeccompProfileDockerDefault, p == corev1.SeccompProfileNameUnconfined:
		return nil
	case strings.HasPrefix(p, corev1.SeccompLocalhostProfileNamePrefix):
		return localDescendingPath(strings.TrimPrefix(p, corev1.SeccompLocalhostProfileNamePrefix), path)
	}
	return field.ErrorList{field.Invalid(path, p, "must be a valid seccomp profile")}
}

// AppArmorProfileOfAnnotation is kube's ApparmorFieldForAnnotation, validated as a field
// is: nil for a value that names no valid profile.
func AppArmorProfileOfAnnotation(value string) *corev1.AppArmorProfile {
	var p *corev1.AppArmorProfile
	switch {
	case value == corev1.DeprecatedAppArmorBetaProfileNameUnconfined:
		p = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case value == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		p = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	case strings.HasPrefix(value, corev1.DeprecatedAppArmorBetaProfileNamePrefix):
		name := strings.TrimPrefix(value, corev1.DeprecatedAppArmorBetaProfileNamePrefix)
		p = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	if len(validateAppArmorProfile(p, nil)) != 0 {
		return nil
	}
	return p
}

// AppArmorAnnotationDeprecated is kube's warning rule for a container's AppArmor
// annotation without a field of its own, given the profile it names
// (AppArmorProfileOfAnnotation): warned of unless the pod's profile already says it.
func AppArmorAnnotationDeprecated(annotated, podProfile *corev1.AppArmorProfile) bool {
	return annotated == nil || !equality.Semantic.DeepEqual(annotated, podProfile)
}

// validAppArmorAnnotation is kube's ValidateAppArmorProfileFormat.
func validAppArmorAnnotation(p string) bool {
	return p == "" || p == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault || p == corev1.DeprecatedAppArmorBetaProfileNameUnconfined ||
		strings.HasPrefix(p, corev1.DeprecatedAppArmorBetaProfileNamePrefix)
}
