package core

import (
	"slices"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// NamespaceFinalizer is the finalizer the namespace controller removes once a namespace is empty.
const NamespaceFinalizer corev1.FinalizerName = "kubernetes"

var NamespaceRules = registry.Rules{
	ReturnDeletedObject: true,
	NoDeleteCollection:  true,
	Default: func(obj runtime.Object) {
		ns := obj.(*corev1.Namespace)
		if ns.Status.Phase == "" {
			ns.Status.Phase = corev1.NamespaceActive
		}
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		// Kubernetes labels every namespace with its own name so selectors can match it.
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	},
	PrepareCreate: func(obj runtime.Object) {
		ns := obj.(*corev1.Namespace)
		ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
		if !slices.Contains(ns.Spec.Finalizers, NamespaceFinalizer) {
			ns.Spec.Finalizers = append(ns.Spec.Finalizers, NamespaceFinalizer)
		}
	},
	// Only the finalize subresource changes spec.finalizers: an update keeps them, so
	// patching them away does not purge a terminating namespace (kube's strategy).
	PrepareUpdate: func(obj, old runtime.Object) {
		obj.(*corev1.Namespace).Spec.Finalizers = old.(*corev1.Namespace).Spec.Finalizers
	},
	// The deletion makes the namespace Terminating; a status write may not change that back
	// (validateNamespaceStatus). kube's namespace storage sets only the deletion timestamp,
	// not the zero grace period of a kind held by finalizers.
	Deleting: func(obj runtime.Object) {
		ns := obj.(*corev1.Namespace)
		ns.Status.Phase, ns.DeletionGracePeriodSeconds = corev1.NamespaceTerminating, nil
	},
	SubresourceUpdates: map[string]registry.SubresourceRules{"finalize": {}, "status": {Validate: validateNamespaceStatus}},
	Validate: func(obj runtime.Object) field.ErrorList {
		ns := obj.(*corev1.Namespace)
		errs := validation.ValidateObjectMeta(&ns.ObjectMeta, false, validation.ValidateNamespaceName, field.NewPath("metadata"))
		// kube's path names the list, not the item.
		path := field.NewPath("spec", "finalizers")
		for _, f := range ns.Spec.Finalizers {
			errs = append(errs, validation.ValidateFinalizerName(string(f), path)...)
			errs = append(errs, registry.KubeFinalizerNameErrors(string(f), path)...)
		}
		return errs
	},
	Fields: func(obj runtime.Object) fields.Set {
		return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
	},
	// kube's namespace status strategy keeps only the spec: labels and annotations change
	// through status too.
	Finalizing: func(obj runtime.Object) bool { return len(obj.(*corev1.Namespace).Spec.Finalizers) > 0 },
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Name", "string", "Name of the namespace", false),
			registry.Column("Status", "string", "The status of the namespace", false),
			registry.Column("Age", "string", "Time since creation", false),
		},
		Row: func(obj runtime.Object) []any {
			ns := obj.(*corev1.Namespace)
			return []any{ns.Name, string(ns.Status.Phase), registry.Age(ns.CreationTimestamp)}
		},
	},
}

// validateNamespaceStatus is kube's ValidateNamespaceStatusUpdate: the phase is Active,
// Terminating once the namespace is being deleted (kube's path spells the field Phase).
func validateNamespaceStatus(obj, _ runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	path := field.NewPath("status", "Phase")
	switch {
	case ns.DeletionTimestamp == nil && ns.Status.Phase != corev1.NamespaceActive:
		return field.ErrorList{field.Invalid(path, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty")}
	case ns.DeletionTimestamp != nil && ns.Status.Phase != corev1.NamespaceTerminating:
		return field.ErrorList{field.Invalid(path, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")}
	}
	return nil
}
