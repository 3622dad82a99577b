package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodSpecWarnings names the parts of a pod spec minilet does not carry out yet, so a user
// learns it at `kubectl apply` instead of finding out later. Remove a line here with the
// change that implements it.
func PodSpecWarnings(spec *corev1.PodSpec, path *field.Path) []string {
	var out []string
	warn := func(p *field.Path, what string) { out = append(out, fmt.Sprintf("%s: %s", p, what)) }
	for i, v := range spec.Volumes {
		if s := v.VolumeSource; s.EmptyDir == nil && s.HostPath == nil && s.ConfigMap == nil && s.Secret == nil &&
			s.DownwardAPI == nil && s.Projected == nil && s.PersistentVolumeClaim == nil && s.Ephemeral == nil && s.Image == nil {
			warn(path.Child("volumes").Index(i), fmt.Sprintf("volume %q is of a type minilet does not mount; the pod will not start", v.Name))
		}
	}
	return out
}

// TemplateWarnings is PodSpecWarnings for a workload's pod template, then kube's warnings
// on the template.
func TemplateWarnings(t *corev1.PodTemplateSpec, path *field.Path) []string {
	return append(PodSpecWarnings(&t.Spec, path.Child("template", "spec")), PodTemplateWarnings(t, path.Child("template"))...)
}

// Regenerated tells whether a write is a create (old is nil) or an update that changed the
// object's metadata.generation (its spec): when kube's workload strategies warn of their pod
// template, so a scale to the same count, a label or a status change does not repeat it.
func Regenerated(obj, old runtime.Object) bool {
	return old == nil || obj.(metav1.Object).GetGeneration() != old.(metav1.Object).GetGeneration()
}
