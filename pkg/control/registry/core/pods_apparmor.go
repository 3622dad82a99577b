package core

import (
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// appArmorAnnotation is a container's deprecated AppArmor annotation that a new pod's
// create turns into the container's field, as kube's applyAppArmorVersionSkew does (the
// KEP's version skew strategy): the annotation stays, the field is what minilet reads.
type appArmorAnnotation struct {
	container *corev1.Container
	key       string
	profile   *corev1.AppArmorProfile // nil when the annotation names no valid profile
	warned    bool                    // profile is nil or differs from the pod's
}

// appArmorAnnotations are those of a pod that is not Windows whose containers have no
// appArmorProfile of their own.
func appArmorAnnotations(pod *corev1.Pod) []appArmorAnnotation {
	if pod.Spec.OS != nil && pod.Spec.OS.Name == corev1.Windows {
		return nil
	}
	var podProfile *corev1.AppArmorProfile
	if sc := pod.Spec.SecurityContext; sc != nil {
		podProfile = sc.AppArmorProfile
	}
	var out []appArmorAnnotation
	for _, c := range corevalidation.Containers(&pod.Spec, nil) {
		key := corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + c.Name
		value, ok := pod.Annotations[key]
		if !ok || (c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil) {
			continue
		}
		profile := corevalidation.AppArmorProfileOfAnnotation(value)
		out = append(out, appArmorAnnotation{c.Container, key, profile, corevalidation.AppArmorAnnotationDeprecated(profile, podProfile)})
	}
	return out
}

// appArmorAnnotationWarnings are kube's: an annotation copied to its field, or naming no
// valid profile, is deprecated; one the pod's own profile already says is not.
func appArmorAnnotationWarnings(pod *corev1.Pod) []string {
	var out []string
	for _, a := range appArmorAnnotations(pod) {
		if a.warned {
			out = append(out, fmt.Sprintf(`%s: deprecated since v1.30; use the "appArmorProfile" field instead`, field.NewPath("metadata", "annotations").Key(a.key)))
		}
	}
	return out
}

// copyAppArmorAnnotations sets the fields appArmorAnnotations copies.
func copyAppArmorAnnotations(pod *corev1.Pod) {
	for _, a := range appArmorAnnotations(pod) {
		if a.profile != nil && a.warned {
			if a.container.SecurityContext == nil {
				a.container.SecurityContext = &corev1.SecurityContext{}
			}
			a.container.SecurityContext.AppArmorProfile = a.profile
		}
	}
}
