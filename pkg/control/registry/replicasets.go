package registry

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var replicaSetRules = Rules{
	Generation: true,
	Warnings: func(obj runtime.Object) []string {
		return templateWarnings(&obj.(*appsv1.ReplicaSet).Spec.Template, field.NewPath("spec"))
	},
	Default: func(obj runtime.Object) {
		rs := obj.(*appsv1.ReplicaSet)
		defaultInt32(&rs.Spec.Replicas, 1)
		defaultPodTemplate(&rs.Spec.Template)
	},
	PrepareCreate: func(obj runtime.Object) { obj.(*appsv1.ReplicaSet).Status = appsv1.ReplicaSetStatus{} },
	Validate:      func(obj runtime.Object) field.ErrorList { return validateReplicaSet(obj.(*appsv1.ReplicaSet)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		rs, o := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
		return append(validateReplicaSet(rs), immutable(rs.Spec.Selector, o.Spec.Selector, field.NewPath("spec", "selector"))...)
	},
	// No Fields: apps/v1 registers no field label conversion, so kube-apiserver refuses
	// status.replicas on ReplicaSets (kubernetes/kubernetes#135136) though it is in their
	// selectable fields.
	Scale: replicasScale(func(rs *appsv1.ReplicaSet) (**int32, int32, string) {
		return &rs.Spec.Replicas, rs.Status.Replicas, selectorText(rs.Spec.Selector)
	}),
	Table: replicaTable(appsv1.ReplicaSetSpec{}.SwaggerDoc(), appsv1.ReplicaSetStatus{}.SwaggerDoc(), func(obj runtime.Object) replicaRow {
		rs := obj.(*appsv1.ReplicaSet)
		return replicaRow{rs.ObjectMeta, deref(rs.Spec.Replicas), rs.Status.Replicas, rs.Status.ReadyReplicas, &rs.Spec.Template, metav1.FormatLabelSelector(rs.Spec.Selector)}
	}),
}

func validateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	errs := validateMeta(rs, true, validation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	errs = append(errs, nonNegative(rs.Spec.Replicas, spec.Child("replicas"))...)
	errs = append(errs, validation.ValidateNonnegativeField(int64(rs.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
	// Kubernetes' own message says "deployment" for ReplicaSets too.
	return append(errs, validateWorkloadSelector(rs.Spec.Selector, &rs.Spec.Template, spec, "deployment", "ReplicaSet", true)...)
}

var replicationControllerRules = Rules{
	Generation: true,
	Warnings: func(obj runtime.Object) []string {
		if t := obj.(*corev1.ReplicationController).Spec.Template; t != nil {
			return templateWarnings(t, field.NewPath("spec"))
		}
		return nil
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
	Scale: replicasScale(func(rc *corev1.ReplicationController) (**int32, int32, string) {
		return &rc.Spec.Replicas, rc.Status.Replicas, labels.SelectorFromSet(rc.Spec.Selector).String()
	}),
	Table: replicaTable(corev1.ReplicationControllerSpec{}.SwaggerDoc(), corev1.ReplicationControllerStatus{}.SwaggerDoc(), func(obj runtime.Object) replicaRow {
		rc := obj.(*corev1.ReplicationController)
		return replicaRow{rc.ObjectMeta, deref(rc.Spec.Replicas), rc.Status.Replicas, rc.Status.ReadyReplicas, rc.Spec.Template, labels.FormatLabels(rc.Spec.Selector)}
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
		defaultPodTemplate(t)
	}
	defaultInt32(&rc.Spec.Replicas, 1)
}

func validateReplicationController(rc *corev1.ReplicationController) field.ErrorList {
	errs := validateMeta(rc, true, validation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	errs = append(errs, nonNegative(rc.Spec.Replicas, spec.Child("replicas"))...)
	errs = append(errs, validation.ValidateNonnegativeField(int64(rc.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
	if len(rc.Spec.Selector) == 0 {
		errs = append(errs, field.Required(spec.Child("selector"), ""))
	}
	errs = append(errs, metav1validation.ValidateLabels(rc.Spec.Selector, spec.Child("selector"))...)
	if rc.Spec.Template == nil {
		return append(errs, field.Required(spec.Child("template"), ""))
	}
	return append(errs, validateReplicatedTemplate(rc.Spec.Template, labels.SelectorFromSet(rc.Spec.Selector), spec.Child("template"), "ReplicationController", true)...)
}

// replicaRow is what the ReplicaSet and ReplicationController tables show.
type replicaRow struct {
	meta                    metav1.ObjectMeta
	desired, current, ready int32
	template                *corev1.PodTemplateSpec
	selector                string
}

func replicaTable(specDoc, statusDoc map[string]string, row func(runtime.Object) replicaRow) *TableDef {
	return &TableDef{
		Columns: []metav1.TableColumnDefinition{
			nameColumn,
			integerColumn("Desired", specDoc["replicas"]),
			integerColumn("Current", statusDoc["replicas"]),
			integerColumn("Ready", statusDoc["readyReplicas"]),
			ageColumn, containersColumn, imagesColumn,
			column("Selector", "string", specDoc["selector"], true),
		},
		Row: func(obj runtime.Object) []any {
			r := row(obj)
			var names, images string
			if r.template != nil {
				names, images = containerCells(r.template)
			}
			return []any{r.meta.Name, int64(r.desired), int64(r.current), int64(r.ready), Age(r.meta.CreationTimestamp), names, images, r.selector}
		},
	}
}
