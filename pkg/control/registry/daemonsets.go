package registry

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var daemonSetRules = Rules{
	Generation: true,
	Warnings: func(obj runtime.Object) []string {
		return templateWarnings(&obj.(*appsv1.DaemonSet).Spec.Template, field.NewPath("spec"))
	},
	Default: func(obj runtime.Object) { defaultDaemonSet(obj.(*appsv1.DaemonSet)) },
	PrepareCreate: func(obj runtime.Object) {
		d := obj.(*appsv1.DaemonSet)
		d.Status = appsv1.DaemonSetStatus{}
		setTemplateGeneration(d, max(templateGeneration(d), 1))
	},
	PrepareUpdate: func(obj, old runtime.Object) {
		d, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
		gen := max(templateGeneration(o), 1)
		t := d.Spec.Template.DeepCopy()
		defaultPodTemplate(t)
		if !equality.Semantic.DeepEqual(*t, o.Spec.Template) {
			gen++
		}
		setTemplateGeneration(d, gen)
	},
	Validate: func(obj runtime.Object) field.ErrorList { return validateDaemonSet(obj.(*appsv1.DaemonSet)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		d, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
		return append(validateDaemonSet(d), immutable(d.Spec.Selector, o.Spec.Selector, field.NewPath("spec", "selector"))...)
	},
	Table: &TableDef{
		Columns: []metav1.TableColumnDefinition{
			nameColumn,
			integerColumn("Desired", appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
			integerColumn("Current", appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
			integerColumn("Ready", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
			integerColumn("Up-to-date", appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
			integerColumn("Available", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
			column("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"], false),
			ageColumn, containersColumn, imagesColumn,
			column("Selector", "string", appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"], true),
		},
		Row: func(obj runtime.Object) []any {
			d := obj.(*appsv1.DaemonSet)
			st := d.Status
			names, images := containerCells(&d.Spec.Template)
			return []any{d.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
				int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), labels.FormatLabels(d.Spec.Template.Spec.NodeSelector),
				Age(d.CreationTimestamp), names, images, metav1.FormatLabelSelector(d.Spec.Selector)}
		},
	},
}

// templateGeneration is kube's internal spec.templateGeneration, which apps/v1 shows as
// the annotation deprecated.daemonset.template.generation (0 when absent or not a number):
// 1 on create, one more at each template change, whatever a client sends. The daemonset
// controller labels its pods with it (pod-template-generation).
func templateGeneration(d *appsv1.DaemonSet) int64 {
	v, _ := strconv.ParseInt(d.Annotations[appsv1.DeprecatedTemplateGeneration], 10, 64)
	return v
}

func setTemplateGeneration(d *appsv1.DaemonSet, gen int64) {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[appsv1.DeprecatedTemplateGeneration] = strconv.FormatInt(gen, 10)
}

func defaultDaemonSet(d *appsv1.DaemonSet) {
	us := &d.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if us.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if us.RollingUpdate.MaxUnavailable == nil {
			one := intstr.FromInt32(1)
			us.RollingUpdate.MaxUnavailable = &one
		}
		if us.RollingUpdate.MaxSurge == nil {
			zero := intstr.FromInt32(0)
			us.RollingUpdate.MaxSurge = &zero
		}
	}
	defaultInt32(&d.Spec.RevisionHistoryLimit, 10)
	defaultPodTemplate(&d.Spec.Template)
}

func validateDaemonSet(d *appsv1.DaemonSet) field.ErrorList {
	errs := validateMeta(d, true, validation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	errs = append(errs, validateWorkloadSelector(d.Spec.Selector, &d.Spec.Template, spec, "daemonset", "DaemonSet", true)...)
	errs = append(errs, validation.ValidateNonnegativeField(int64(d.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
	errs = append(errs, nonNegative(d.Spec.RevisionHistoryLimit, spec.Child("revisionHistoryLimit"))...)
	us := spec.Child("updateStrategy")
	switch d.Spec.UpdateStrategy.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
	case appsv1.RollingUpdateDaemonSetStrategyType:
		ru, p := d.Spec.UpdateStrategy.RollingUpdate, us.Child("rollingUpdate")
		if ru == nil {
			return append(errs, field.Required(p, ""))
		}
		errs = append(errs, validateIntOrPercent(ru.MaxUnavailable, p.Child("maxUnavailable"), true)...)
		errs = append(errs, validateIntOrPercent(ru.MaxSurge, p.Child("maxSurge"), true)...)
		switch unavailable, surge := !isZero(ru.MaxUnavailable), !isZero(ru.MaxSurge); {
		case unavailable && surge:
			errs = append(errs, field.Invalid(p.Child("maxSurge"), ru.MaxSurge, "may not be set when maxUnavailable is non-zero"))
		case !unavailable && !surge:
			errs = append(errs, field.Required(p.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
		}
	default:
		errs = append(errs, field.NotSupported(us.Child("type"), d.Spec.UpdateStrategy.Type,
			[]appsv1.DaemonSetUpdateStrategyType{appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType}))
	}
	return errs
}
