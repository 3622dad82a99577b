// Package apps holds the rules of the apps/v1 kinds: Deployments, ReplicaSets,
// StatefulSets, DaemonSets and ControllerRevisions, as Kubernetes' pkg/registry/apps has
// them; what they share with the other workloads (a pod template, a selector, their
// columns) is registry's.
package apps

import (
	"github.com/minik8s/minik8s/pkg/control/registry"
	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

var DeploymentRules = registry.Rules{
	SubresourceUpdates: statusRules(validateDeploymentStatus),
	// kube's deployment status strategy keeps the labels.
	StatusMetadata: func(meta, old metav1.Object) { meta.SetLabels(old.GetLabels()) },
	Generation:     true,
	// Annotations are copied to the Deployment's ReplicaSets, so kube counts them as intent.
	GenerationChanged: func(obj, old runtime.Object) bool {
		return !apiequality.Semantic.DeepEqual(obj.(*appsv1.Deployment).Annotations, old.(*appsv1.Deployment).Annotations)
	},
	Warnings: func(obj, old runtime.Object) []string {
		d := obj.(*appsv1.Deployment)
		out := registry.WorkloadNameWarnings(d.Name, old)
		if registry.Regenerated(obj, old) {
			out = append(out, registry.TemplateWarnings(&d.Spec.Template, field.NewPath("spec"))...)
		}
		return out
	},
	Default:       func(obj runtime.Object) { defaultDeployment(obj.(*appsv1.Deployment)) },
	PrepareCreate: func(obj runtime.Object) { obj.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{} },
	Validate:      func(obj runtime.Object) field.ErrorList { return validateDeployment(obj.(*appsv1.Deployment)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
		return append(validateDeployment(d), registry.Immutable(d.Spec.Selector, o.Spec.Selector, field.NewPath("spec", "selector"))...)
	},
	Scale: registry.ReplicasScale(func(d *appsv1.Deployment) (**int32, int32, string) {
		return &d.Spec.Replicas, d.Status.Replicas, registry.SelectorText(d.Spec.Selector)
	}),
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Ready", "string", "Number of the pod with ready state", false),
			registry.Column("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"], false),
			registry.Column("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"], false),
			registry.AgeColumn, registry.ContainersColumn, registry.ImagesColumn,
			registry.Column("Selector", "string", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"], true),
		},
		Row: func(obj runtime.Object) []any {
			d := obj.(*appsv1.Deployment)
			names, images := registry.ContainerCells(&d.Spec.Template)
			return []any{d.Name, registry.Ratio(d.Status.ReadyReplicas, registry.Deref(d.Spec.Replicas)), int64(d.Status.UpdatedReplicas),
				int64(d.Status.AvailableReplicas), registry.Age(d.CreationTimestamp), names, images, metav1.FormatLabelSelector(d.Spec.Selector)}
		},
	},
}

// defaultDeployment is Kubernetes' apps/v1 defaulting.
func defaultDeployment(d *appsv1.Deployment) {
	s := &d.Spec
	registry.DefaultInt32(&s.Replicas, 1)
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
	registry.DefaultInt32(&s.RevisionHistoryLimit, 10)
	registry.DefaultInt32(&s.ProgressDeadlineSeconds, 600)
	registry.DefaultPodTemplate(&s.Template)
}

func validateDeployment(d *appsv1.Deployment) field.ErrorList {
	errs := registry.ValidateMeta(d, true, validation.NameIsDNSSubdomain)
	spec, s := field.NewPath("spec"), &d.Spec
	errs = append(errs, registry.NonNegative(s.Replicas, spec.Child("replicas"))...)
	errs = append(errs, registry.ValidateWorkloadSelector(s.Selector, &s.Template, spec, "deployment", "ReplicaSet", true)...)
	errs = append(errs, validateDeploymentStrategy(&s.Strategy, spec.Child("strategy"))...)
	errs = append(errs, validation.ValidateNonnegativeField(int64(s.MinReadySeconds), spec.Child("minReadySeconds"))...)
	errs = append(errs, registry.NonNegative(s.RevisionHistoryLimit, spec.Child("revisionHistoryLimit"))...)
	if p := s.ProgressDeadlineSeconds; p != nil {
		errs = append(errs, registry.NonNegative(p, spec.Child("progressDeadlineSeconds"))...)
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
		errs := registry.ValidateIntOrPercent(ru.MaxUnavailable, p.Child("maxUnavailable"))
		errs = append(errs, registry.ValidateIntOrPercent(ru.MaxSurge, p.Child("maxSurge"))...)
		if registry.IsZero(ru.MaxUnavailable) && registry.IsZero(ru.MaxSurge) {
			errs = append(errs, field.Invalid(p.Child("maxUnavailable"), ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
		}
		return append(errs, registry.AtMost100Percent(ru.MaxUnavailable, p.Child("maxUnavailable"))...)
	}
	var ru *internalRollingUpdate
	if r := s.RollingUpdate; r != nil {
		ru = newInternalRollingUpdate(r.MaxUnavailable, r.MaxSurge)
	}
	return field.ErrorList{field.NotSupported(path, internalStrategy{string(s.Type), ru},
		[]appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType})}
}

// internalStrategy is a Deployment's or DaemonSet's strategy as kube's internal types hold
// it: kube reports an unknown type with the whole strategy as its value, printed as those
// untagged structs marshal ({"Type":"Foo","RollingUpdate":{"MaxUnavailable":0,"MaxSurge":1}}).
type internalStrategy struct {
	Type          string
	RollingUpdate *internalRollingUpdate
}

// internalRollingUpdate holds values, not pointers: an unset one is 0.
type internalRollingUpdate struct {
	MaxUnavailable, MaxSurge intstr.IntOrString
}

func newInternalRollingUpdate(maxUnavailable, maxSurge *intstr.IntOrString) *internalRollingUpdate {
	return &internalRollingUpdate{ptr.Deref(maxUnavailable, intstr.IntOrString{}), ptr.Deref(maxSurge, intstr.IntOrString{})}
}
