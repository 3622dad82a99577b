package apps

import (
	"strconv"

	"github.com/minik8s/minik8s/pkg/control/registry"
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

var DaemonSetRules = registry.Rules{
	SubresourceUpdates: statusRules(validateDaemonSetStatus),
	Generation:         true,
	// kube warns of the template again when it changes (its template generation does).
	Warnings: func(obj, old runtime.Object) []string {
		d := obj.(*appsv1.DaemonSet)
		if old != nil && templateGeneration(d) == templateGeneration(old.(*appsv1.DaemonSet)) {
			return nil
		}
		return registry.TemplateWarnings(&d.Spec.Template, field.NewPath("spec"))
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
		registry.DefaultPodTemplate(t)
		if !equality.Semantic.DeepEqual(*t, o.Spec.Template) {
			gen++
		}
		setTemplateGeneration(d, gen)
	},
	Validate: func(obj runtime.Object) field.ErrorList { return validateDaemonSet(obj.(*appsv1.DaemonSet)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		d, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
		// The selector's immutability before the spec's checks, in kube's order.
		errs := registry.ValidateMeta(d, true, validation.NameIsDNSSubdomain)
		errs = append(errs, registry.Immutable(d.Spec.Selector, o.Spec.Selector, field.NewPath("spec", "selector"))...)
		return append(errs, validateDaemonSetSpec(d)...)
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.IntegerColumn("Desired", appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
			registry.IntegerColumn("Current", appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
			registry.IntegerColumn("Ready", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
			registry.IntegerColumn("Up-to-date", appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
			registry.IntegerColumn("Available", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
			registry.Column("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"], false),
			registry.AgeColumn, registry.ContainersColumn, registry.ImagesColumn,
			registry.Column("Selector", "string", appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"], true),
		},
		Row: func(obj runtime.Object) []any {
			d := obj.(*appsv1.DaemonSet)
			st := d.Status
			names, images := registry.ContainerCells(&d.Spec.Template)
			return []any{d.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
				int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), labels.FormatLabels(d.Spec.Template.Spec.NodeSelector),
				registry.Age(d.CreationTimestamp), names, images, metav1.FormatLabelSelector(d.Spec.Selector)}
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
	registry.DefaultInt32(&d.Spec.RevisionHistoryLimit, 10)
	registry.DefaultPodTemplate(&d.Spec.Template)
}

func validateDaemonSet(d *appsv1.DaemonSet) field.ErrorList {
	return append(registry.ValidateMeta(d, true, validation.NameIsDNSSubdomain), validateDaemonSetSpec(d)...)
}

func validateDaemonSetSpec(d *appsv1.DaemonSet) field.ErrorList {
	spec := field.NewPath("spec")
	errs := registry.ValidateWorkloadSelector(d.Spec.Selector, &d.Spec.Template, spec, "daemonset", "DaemonSet", true)
	errs = append(errs, validation.ValidateNonnegativeField(int64(d.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
	errs = append(errs, validateDaemonSetStrategy(d.Spec.UpdateStrategy, spec.Child("updateStrategy"))...)
	return append(errs, registry.NonNegative(d.Spec.RevisionHistoryLimit, spec.Child("revisionHistoryLimit"))...)
}

// validateDaemonSetStrategy is kube's ValidateDaemonSetUpdateStrategy.
func validateDaemonSetStrategy(strategy appsv1.DaemonSetUpdateStrategy, us *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch strategy.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
	case appsv1.RollingUpdateDaemonSetStrategyType:
		ru, p := strategy.RollingUpdate, us.Child("rollingUpdate")
		if ru == nil {
			return field.ErrorList{field.Required(p, "")}
		}
		errs = append(errs, registry.ValidateIntOrPercent(ru.MaxUnavailable, p.Child("maxUnavailable"))...)
		errs = append(errs, registry.ValidateIntOrPercent(ru.MaxSurge, p.Child("maxSurge"))...)
		errs = append(errs, registry.AtMost100Percent(ru.MaxUnavailable, p.Child("maxUnavailable"))...)
		errs = append(errs, registry.AtMost100Percent(ru.MaxSurge, p.Child("maxSurge"))...)
		switch unavailable, surge := !registry.IsZero(ru.MaxUnavailable), !registry.IsZero(ru.MaxSurge); {
		case unavailable && surge:
			errs = append(errs, field.Invalid(p.Child("maxSurge"), ru.MaxSurge, "may not be set when maxUnavailable is non-zero"))
		case !unavailable && !surge:
			errs = append(errs, field.Required(p.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
		}
	default:
		var ru *internalRollingUpdate
		if r := strategy.RollingUpdate; r != nil {
			ru = newInternalRollingUpdate(r.MaxUnavailable, r.MaxSurge)
		}
		errs = append(errs, field.NotSupported(us, internalStrategy{string(strategy.Type), ru},
			[]appsv1.DaemonSetUpdateStrategyType{appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType}))
	}
	return errs
}
