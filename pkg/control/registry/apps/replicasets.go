package apps

import (
	"github.com/minik8s/minik8s/pkg/control/registry"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var ReplicaSetRules = registry.Rules{
	SubresourceUpdates: statusRules(validateReplicaSetStatus),
	Generation:         true,
	Warnings: func(obj, old runtime.Object) []string {
		rs := obj.(*appsv1.ReplicaSet)
		out := registry.WorkloadNameWarnings(rs.Name, old)
		if registry.Regenerated(obj, old) {
			out = append(out, registry.TemplateWarnings(&rs.Spec.Template, field.NewPath("spec"))...)
		}
		return out
	},
	Default: func(obj runtime.Object) {
		rs := obj.(*appsv1.ReplicaSet)
		registry.DefaultInt32(&rs.Spec.Replicas, 1)
		registry.DefaultPodTemplate(&rs.Spec.Template)
	},
	PrepareCreate: func(obj runtime.Object) { obj.(*appsv1.ReplicaSet).Status = appsv1.ReplicaSetStatus{} },
	Validate:      func(obj runtime.Object) field.ErrorList { return validateReplicaSet(obj.(*appsv1.ReplicaSet)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		rs, o := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
		return append(validateReplicaSet(rs), registry.Immutable(rs.Spec.Selector, o.Spec.Selector, field.NewPath("spec", "selector"))...)
	},
	// No Fields: apps/v1 registers no field label conversion, so kube-apiserver refuses
	// status.replicas on ReplicaSets (kubernetes/kubernetes#135136) though it is in their
	// selectable fields.
	Scale: registry.ReplicasScale(func(rs *appsv1.ReplicaSet) (**int32, int32, string) {
		return &rs.Spec.Replicas, rs.Status.Replicas, registry.SelectorText(rs.Spec.Selector)
	}),
	Table: registry.ReplicaTable(appsv1.ReplicaSetSpec{}.SwaggerDoc(), appsv1.ReplicaSetStatus{}.SwaggerDoc(), func(obj runtime.Object) registry.ReplicaRow {
		rs := obj.(*appsv1.ReplicaSet)
		return registry.ReplicaRow{Meta: rs.ObjectMeta, Desired: registry.Deref(rs.Spec.Replicas), Current: rs.Status.Replicas, Ready: rs.Status.ReadyReplicas, Template: &rs.Spec.Template, Selector: metav1.FormatLabelSelector(rs.Spec.Selector)}
	}),
}

func validateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	errs := registry.ValidateMeta(rs, true, validation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	errs = append(errs, registry.NonNegative(rs.Spec.Replicas, spec.Child("replicas"))...)
	errs = append(errs, validation.ValidateNonnegativeField(int64(rs.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
	// Kubernetes' own message says "deployment" for ReplicaSets too.
	return append(errs, registry.ValidateWorkloadSelector(rs.Spec.Selector, &rs.Spec.Template, spec, "deployment", "ReplicaSet", true)...)
}
