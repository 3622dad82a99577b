package registry

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podTemplateRules: a PodTemplate is a stored pod template no controller acts on; it is
// defaulted and validated as the templates of the workload kinds are, with any restart
// policy a pod may have.
var podTemplateRules = Rules{
	Warnings: func(obj runtime.Object) []string {
		return templateWarnings(&obj.(*corev1.PodTemplate).Template, field.NewPath("template"))
	},
	Default: func(obj runtime.Object) { defaultPodTemplate(&obj.(*corev1.PodTemplate).Template) },
	Validate: func(obj runtime.Object) field.ErrorList {
		return validatePodTemplate(&obj.(*corev1.PodTemplate).Template, field.NewPath("template"),
			corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)
	},
	Table: &TableDef{
		Columns: []metav1.TableColumnDefinition{
			nameColumn,
			// Shown without -o wide, as kube-apiserver shows them for a PodTemplate.
			column("Containers", "string", containersColumn.Description, false),
			column("Images", "string", imagesColumn.Description, false),
			column("Pod Labels", "string", "The labels for the pod template.", false),
		},
		Row: func(obj runtime.Object) []any {
			pt := obj.(*corev1.PodTemplate)
			names, images := containerCells(&pt.Template)
			return []any{pt.Name, names, images, labels.FormatLabels(pt.Template.Labels)}
		},
	},
}
