package core

import (
	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodTemplateRules: a PodTemplate is a stored pod template no controller acts on; it is
// defaulted and validated as the templates of the workload kinds are, with any restart
// policy a pod may have.
var PodTemplateRules = registry.Rules{
	ReturnDeletedObject: true,
	// Its generation counts changes to the template, as kube's podTemplateStrategy does.
	GenerationChanged: func(obj, old runtime.Object) bool {
		return !equality.Semantic.DeepEqual(obj.(*corev1.PodTemplate).Template, old.(*corev1.PodTemplate).Template)
	},
	Warnings: func(obj, old runtime.Object) []string {
		if !registry.Regenerated(obj, old) {
			return nil
		}
		t := &obj.(*corev1.PodTemplate).Template
		return append(registry.PodSpecWarnings(&t.Spec, field.NewPath("template", "spec")), registry.PodTemplateWarnings(t, field.NewPath("template"))...)
	},
	Default: func(obj runtime.Object) { registry.DefaultPodTemplate(&obj.(*corev1.PodTemplate).Template) },
	Validate: func(obj runtime.Object) field.ErrorList {
		return registry.ValidatePodTemplate(&obj.(*corev1.PodTemplate).Template, field.NewPath("template"),
			corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			// Shown without -o wide, as kube-apiserver shows them for a PodTemplate.
			registry.Column("Containers", "string", registry.ContainersColumn.Description, false),
			registry.Column("Images", "string", registry.ImagesColumn.Description, false),
			registry.Column("Pod Labels", "string", "The labels for the pod template.", false),
		},
		Row: func(obj runtime.Object) []any {
			pt := obj.(*corev1.PodTemplate)
			names, images := registry.ContainerCells(&pt.Template)
			return []any{pt.Name, names, images, labels.FormatLabels(pt.Template.Labels)}
		},
	},
}
