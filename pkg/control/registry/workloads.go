package registry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/poddefaults"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// What the workload kinds (Deployment, ReplicaSet, StatefulSet, DaemonSet,
// ReplicationController, Job, CronJob) share: a pod template, a selector of its pods, and
// the columns that show them.

// DefaultPodTemplate applies the pod spec defaults to a pod template, as Kubernetes'
// defaulters do for every embedded PodTemplateSpec (not those only a pod gets: requests
// from limits, enableServiceLinks, priority).
func DefaultPodTemplate(t *corev1.PodTemplateSpec) {
	poddefaults.PodSpec(&t.Spec)
}

// ValidatePodTemplate checks a pod template: its metadata, its containers, and a restart
// policy among those the workload allows.
func ValidatePodTemplate(t *corev1.PodTemplateSpec, path *field.Path, restartPolicies ...corev1.RestartPolicy) field.ErrorList {
	errs := validateTemplateMetadata(t, path)
	spec := path.Child("spec")
	errs = append(errs, corevalidation.ValidatePodSpec(&t.Spec, "", spec, sets.New[string]())...)
	errs = append(errs, corevalidation.ValidateProfileAnnotations(t.Annotations, &t.Spec, spec)...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return append(errs, validateRestartPolicy(t, path, restartPolicies)...)
}

// validateRestartPolicy checks a pod template's restart policy is among those the workload allows.
func validateRestartPolicy(t *corev1.PodTemplateSpec, path *field.Path, allowed []corev1.RestartPolicy) field.ErrorList {
	if !slices.Contains(allowed, t.Spec.RestartPolicy) {
		return field.ErrorList{field.NotSupported(path.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, allowed)}
	}
	return nil
}

// validateTemplateMetadata checks a pod template's labels and annotations, those a pod
// gives meaning to included. Kubernetes' ValidatePodTemplateSpec reports them at
// template.labels and template.annotations, without "metadata", and so do we.
func validateTemplateMetadata(t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	annotations := path.Child("annotations")
	errs := metav1validation.ValidateLabels(t.Labels, path.Child("labels"))
	errs = append(errs, validation.ValidateAnnotations(t.Annotations, annotations)...)
	return append(errs, corevalidation.ValidatePodSpecificAnnotations(t.Annotations, &t.Spec, annotations, false)...)
}

// ValidateReplicatedTemplate checks the template of a kind that keeps pods running
// (ReplicaSet, Deployment, StatefulSet, DaemonSet, ReplicationController): the selector
// must select it, and its pods restart always and never time out. Without podSpec its
// pod spec is not checked, but its labels, annotations and restart policy are. kind names
// the workload in the message about activeDeadlineSeconds, as kube's does.
func ValidateReplicatedTemplate(t *corev1.PodTemplateSpec, selector labels.Selector, path *field.Path, kind string, podSpec bool) field.ErrorList {
	var errs field.ErrorList
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(path.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	if podSpec {
		errs = append(errs, ValidatePodTemplate(t, path, corev1.RestartPolicyAlways)...)
	} else {
		errs = append(errs, validateTemplateMetadata(t, path)...)
		errs = append(errs, validateRestartPolicy(t, path, []corev1.RestartPolicy{corev1.RestartPolicyAlways})...)
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(path.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

// ValidateWorkloadSelector checks a required, non-empty label selector and the template it
// must select (its pod spec too if podSpec). kind names the workload in the message about
// an empty selector, templateKind in the one about activeDeadlineSeconds.
func ValidateWorkloadSelector(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, spec *field.Path, kind, templateKind string, podSpec bool) field.ErrorList {
	path := spec.Child("selector")
	if sel == nil {
		return append(field.ErrorList{field.Required(path, "")}, ValidateReplicatedTemplate(t, labels.Nothing(), spec.Child("template"), templateKind, podSpec)...)
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(path, sel, "empty selector is invalid for "+kind))
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(errs, field.Invalid(path, sel, "invalid label selector"))
	}
	return append(errs, ValidateReplicatedTemplate(t, selector, spec.Child("template"), templateKind, podSpec)...)
}

// ContainerCells are the CONTAINERS and IMAGES columns of a workload.
func ContainerCells(t *corev1.PodTemplateSpec) (names, images string) {
	var n, i []string
	for _, c := range t.Spec.Containers {
		n, i = append(n, c.Name), append(i, c.Image)
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

// SelectorText is a label selector as a scale subresource's status.selector has it
// ("<invalid>" if it is not one); tables print selectors with metav1.FormatLabelSelector.
func SelectorText(sel *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "<invalid>"
	}
	return s.String()
}

var (
	ContainersColumn = Column("Containers", "string", "Names of each container in the template.", true)
	ImagesColumn     = Column("Images", "string", "Images referenced by each container in the template.", true)
)

// Ratio is a READY-style cell: "ready/desired".
func Ratio(a, b int32) string { return fmt.Sprintf("%d/%d", a, b) }

// ReplicaRow is what the ReplicaSet and ReplicationController tables show.
type ReplicaRow struct {
	Meta                    metav1.ObjectMeta
	Desired, Current, Ready int32
	Template                *corev1.PodTemplateSpec
	Selector                string
}

// ReplicaTable is the table of the ReplicaSet and ReplicationController kinds.
func ReplicaTable(specDoc, statusDoc map[string]string, row func(runtime.Object) ReplicaRow) *TableDef {
	return &TableDef{
		Columns: []metav1.TableColumnDefinition{
			NameColumn,
			IntegerColumn("Desired", specDoc["replicas"]),
			IntegerColumn("Current", statusDoc["replicas"]),
			IntegerColumn("Ready", statusDoc["readyReplicas"]),
			AgeColumn, ContainersColumn, ImagesColumn,
			Column("Selector", "string", specDoc["selector"], true),
		},
		Row: func(obj runtime.Object) []any {
			r := row(obj)
			var names, images string
			if r.Template != nil {
				names, images = ContainerCells(r.Template)
			}
			return []any{r.Meta.Name, int64(r.Desired), int64(r.Current), int64(r.Ready), Age(r.Meta.CreationTimestamp), names, images, r.Selector}
		},
	}
}
