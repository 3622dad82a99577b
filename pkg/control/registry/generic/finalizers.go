package generic

import (
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// anyFinalizerGroups are the groups whose kinds kube-apiserver checks with apimachinery's
// ObjectMeta validation alone, which takes any qualified finalizer name; the other
// built-in kinds go through its core validation, which adds validateKubeFinalizerName
// (but for a core/v1 Event, which it validates loosely for backwards compatibility).
var anyFinalizerGroups = sets.New("admissionregistration.k8s.io", "coordination.k8s.io", "node.k8s.io", "policy",
	"apiextensions.k8s.io", "apiregistration.k8s.io")

// validateFinalizerNames is kube's validateKubeFinalizerName for each of m's finalizers:
// one without a domain must be a standard one.
func validateFinalizerNames(res *registry.Resource, m *metav1.ObjectMeta) field.ErrorList {
	if anyFinalizerGroups.Has(res.Group) || registry.IsCustom(res.GVK()) || res.GroupResource() == corev1.Resource("events") {
		return nil
	}
	var errs field.ErrorList
	for i, f := range m.Finalizers {
		errs = append(errs, registry.KubeFinalizerNameErrors(f, field.NewPath("metadata", "finalizers").Index(i))...)
	}
	return errs
}

// withFinalizerErrors puts finalizer errors after the metadata errors errs opens with,
// where kube's ObjectMeta validation reports them, before the spec's.
func withFinalizerErrors(errs, finalizerErrs field.ErrorList) field.ErrorList {
	i := slices.IndexFunc(errs, func(e *field.Error) bool { return !strings.HasPrefix(e.Field, "metadata") })
	if i < 0 {
		i = len(errs)
	}
	return slices.Concat(errs[:i], finalizerErrs, errs[i:])
}
