package registry

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var deploymentRules = Rules{
	// kube's deployment status strategy keeps the labels.
	StatusMetadata: func(meta, old metav1.Object) { meta.SetLabels(old.GetLabels()) },
	Generation:     true,
	Warnings: func(obj runtime.Object) []string {
		return templateWarnings(&obj.(*appsv1.Deployment).Spec.Template, field.NewPath("spec"))
	},
	Default:       func(obj runtime.Object) { defaultDeployment(obj.(*appsv1.Deployment)) },
	PrepareCreate: func(obj runtime.Object) { obj.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{} },
	Validate:      func(obj runtime.Object) field.ErrorList { return validateDeployment(obj.(*appsv1.Deployment)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
		return append(validateDeployment(d), immutable(d.Spec.Selector, o.Spec.Selector, field.NewPath("spec", "selector"))...)
	},
	Scale: replicasScale(func(d *appsv1.Deployment) (**int32, int32, string) {
		return &d.Spec.Replicas, d.Status.Replicas, selectorText(d.Spec.Selector)
	}),
	Table: &TableDef{
		Columns: []metav1.TableColumnDefinition{
			nameColumn,
			column("Ready", "string", "Number of the pod with ready state", false),
			column("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"], false),
			column("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"], false),
			ageColumn, containersColumn, imagesColumn,
			column("Selector", "string", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"], true),
		},
		Row: func(obj runtime.Object) []any {
			d := obj.(*appsv1.Deployment)
			names, images := containerCells(&d.Spec.Template)
			return []any{d.Name, ratio(d.Status.ReadyReplicas, deref(d.Spec.Replicas)), int64(d.Status.UpdatedReplicas),
				int64(d.Status.AvailableReplicas), Age(d.CreationTimestamp), names, images, metav1.FormatLabelSelector(d.Spec.Selector)}
		},
	},
}

// defaultDeployment is Kubernetes' apps/v1 defaulting.
func defaultDeployment(d *appsv1.Deployment) {
	s := &d.Spec
	defaultInt32(&s.Replicas, 1)
	if s.Strategy.Type == "" {
		s.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.Strategy.RollingUpdate == nil {
			s.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		quarter := intstr.FromString("25%")
		if s.Strategy.RollingUpdate.MaxUnavailable == nil {
			s.Strategy.RollingUpdate.MaxUnavailable = &quarter
		}
		if s.Strategy.RollingUpdate.MaxSurge == nil {
			s.Strategy.RollingUpdate.MaxSurge = &quarter
		}
	}
	defaultInt32(&s.RevisionHistoryLimit, 10)
	defaultInt32(&s.ProgressDeadlineSeconds, 600)
	defaultPodTemplate(&s.Template)
}

func validateDeployment(d *appsv1.Deployment) field.ErrorList {
	errs := validateMeta(d, true, validation.NameIsDNSSubdomain)
	spec, s := field.NewPath("spec"), &d.Spec
	errs = append(errs, nonNegative(s.Replicas, spec.Child("replicas"))...)
	errs = append(errs, validateWorkloadSelector(s.Selector, &s.Template, spec, "deployment", "ReplicaSet", true)...)
	errs = append(errs, validateDeploymentStrategy(&s.Strategy, spec.Child("strategy"))...)
	errs = append(errs, validation.ValidateNonnegativeField(int64(s.MinReadySeconds), spec.Child("minReadySeconds"))...)
	errs = append(errs, nonNegative(s.RevisionHistoryLimit, spec.Child("revisionHistoryLimit"))...)
	if p := s.ProgressDeadlineSeconds; p != nil {
		errs = append(errs, nonNegative(p, spec.Child("progressDeadlineSeconds"))...)
		if *p <= s.MinReadySeconds {
			errs = append(errs, field.Invalid(spec.Child("progressDeadlineSeconds"), *p, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateDeploymentStrategy(s *appsv1.DeploymentStrategy, path *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(path.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
		return nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		ru, p := s.RollingUpdate, path.Child("rollingUpdate")
		if ru == nil {
			return field.ErrorList{field.Required(p, "this should be defaulted and never be nil")}
		}
		errs := validateIntOrPercent(ru.MaxUnavailable, p.Child("maxUnavailable"), true)
		errs = append(errs, validateIntOrPercent(ru.MaxSurge, p.Child("maxSurge"), false)...)
		if isZero(ru.MaxUnavailable) && isZero(ru.MaxSurge) {
			errs = append(errs, field.Invalid(p.Child("maxUnavailable"), ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
		}
		return errs
	}
	return field.ErrorList{field.NotSupported(path.Child("type"), s.Type,
		[]appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType})}
}
