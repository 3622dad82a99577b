package core

import (
	"fmt"
	"maps"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var ReplicationControllerRules = registry.Rules{
	Generation: true,
	// kube's ValidateReplicationControllerStatusUpdate: a status write checks the status.
	SubresourceUpdates: map[string]registry.SubresourceRules{"status": {Validate: func(obj, _ runtime.Object) field.ErrorList {
		s := &obj.(*corev1.ReplicationController).Status
		return registry.ReplicaSetStatus(field.NewPath("status"), s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas, s.ObservedGeneration, nil)
	}}},
	Warnings: func(obj, old runtime.Object) []string {
		rc := obj.(*corev1.ReplicationController)
		if old == nil {
			return append(registry.WorkloadNameWarnings(rc.Name, nil), templateWarnings(rc.Spec.Template, rc.Spec.Template)...)
		}
		if !registry.Regenerated(obj, old) {
			return nil
		}
		// kube's rcStrategy.WarningsOnUpdate passes the templates swapped: it warns of the
		// old one. What minik8s does not act on is the new one's.
		return templateWarnings(rc.Spec.Template, old.(*corev1.ReplicationController).Spec.Template)
	},
	Default: func(obj runtime.Object) { defaultReplicationController(obj.(*corev1.ReplicationController)) },
	PrepareCreate: func(obj runtime.Object) {
		obj.(*corev1.ReplicationController).Status = corev1.ReplicationControllerStatus{}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateReplicationController(obj.(*corev1.ReplicationController))
	},
	Fields: func(obj runtime.Object) fields.Set {
		return fields.Set{"status.replicas": fmt.Sprint(obj.(*corev1.ReplicationController).Status.Replicas)}
	},
	Scale: registry.ReplicasScale(func(rc *corev1.ReplicationController) (**int32, int32, string) {
		return &rc.Spec.Replicas, rc.Status.Replicas, labels.SelectorFromSet(rc.Spec.Selector).String()
	}),
	Table: registry.ReplicaTable(corev1.ReplicationControllerSpec{}.SwaggerDoc(), corev1.ReplicationControllerStatus{}.SwaggerDoc(), func(obj runtime.Object) registry.ReplicaRow {
		rc := obj.(*corev1.ReplicationController)
		return registry.ReplicaRow{Meta: rc.ObjectMeta, Desired: registry.Deref(rc.Spec.Replicas), Current: rc.Status.Replicas, Ready: rc.Status.ReadyReplicas, Template: rc.Spec.Template, Selector: labels.FormatLabels(rc.Spec.Selector)}
	}),
}

// defaultReplicationController: an RC without a selector or labels takes its template's.
func defaultReplicationController(rc *corev1.ReplicationController) {
	if t := rc.Spec.Template; t != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = maps.Clone(t.Labels)
		}
		if len(rc.Labels) == 0 {
			rc.Labels = maps.Clone(t.Labels)
		}
		registry.DefaultPodTemplate(t)
	}
	registry.DefaultInt32(&rc.Spec.Replicas, 1)
}

func validateReplicationController(rc *corev1.ReplicationController) field.ErrorList {
	errs := registry.ValidateMeta(rc, true, validation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	// In the order of kube's ValidateReplicationControllerSpec.
	errs = append(errs, validation.ValidateNonnegativeField(int64(rc.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
	if len(rc.Spec.Selector) == 0 {
		errs = append(errs, field.Required(spec.Child("selector"), ""))
	}
	errs = append(errs, metav1validation.ValidateLabels(rc.Spec.Selector, spec.Child("selector"))...)
	errs = append(errs, registry.NonNegative(rc.Spec.Replicas, spec.Child("replicas"))...)
	if rc.Spec.Template == nil {
		return append(errs, field.Required(spec.Child("template"), ""))
	}
	return append(errs, registry.ValidateReplicatedTemplate(rc.Spec.Template, labels.SelectorFromSet(rc.Spec.Selector), spec.Child("template"), "ReplicationController", true)...)
}

// templateWarnings are what minik8s does not act on in an RC's template t, then kube's
// warnings on template kube (either may be nil).
func templateWarnings(t, kube *corev1.PodTemplateSpec) []string {
	var out []string
	if t != nil {
		out = registry.PodSpecWarnings(&t.Spec, field.NewPath("spec", "template", "spec"))
	}
	if kube != nil {
		out = append(out, registry.PodTemplateWarnings(kube, field.NewPath("spec", "template"))...)
	}
	return out
}
