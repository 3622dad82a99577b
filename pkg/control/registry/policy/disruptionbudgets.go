// Package policy holds the rules of policy/v1 PodDisruptionBudgets, as Kubernetes'
// pkg/registry/policy has them.
package policy

import (
	"github.com/minik8s/minik8s/pkg/control/registry"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var PodDisruptionBudgetRules = registry.Rules{
	Generation: true,
	// kube's ValidatePodDisruptionBudgetStatusUpdate: the conditions, then the counts.
	SubresourceUpdates: map[string]registry.SubresourceRules{"status": {Validate: func(obj, _ runtime.Object) field.ErrorList {
		s, path := &obj.(*policyv1.PodDisruptionBudget).Status, field.NewPath("status")
		errs := metav1validation.ValidateConditions(s.Conditions, path.Child("conditions"))
		return append(errs, registry.StatusCounts(path, registry.Count32("disruptionsAllowed", s.DisruptionsAllowed),
			registry.Count32("currentHealthy", s.CurrentHealthy), registry.Count32("desiredHealthy", s.DesiredHealthy), registry.Count32("expectedPods", s.ExpectedPods))...)
	}}},
	PrepareCreate: func(obj runtime.Object) {
		obj.(*policyv1.PodDisruptionBudget).Status = policyv1.PodDisruptionBudgetStatus{}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validatePodDisruptionBudget(obj.(*policyv1.PodDisruptionBudget))
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Min Available", "string", "The minimum number of pods that must be available.", false),
			registry.Column("Max Unavailable", "string", "The maximum number of pods that may be unavailable.", false),
			registry.IntegerColumn("Allowed Disruptions", "Calculated number of pods that may be disrupted at this time."),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			pdb := obj.(*policyv1.PodDisruptionBudget)
			return []any{pdb.Name, intOrPercentText(pdb.Spec.MinAvailable), intOrPercentText(pdb.Spec.MaxUnavailable),
				int64(pdb.Status.DisruptionsAllowed), registry.Age(pdb.CreationTimestamp)}
		},
	},
}

func validatePodDisruptionBudget(pdb *policyv1.PodDisruptionBudget) field.ErrorList {
	errs := registry.ValidateMeta(pdb, true, validation.NameIsDNSSubdomain)
	spec, s := field.NewPath("spec"), &pdb.Spec
	if s.MinAvailable != nil && s.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(spec, registry.GoNamed{V: s}, "minAvailable and maxUnavailable cannot be both set"))
	}
	errs = append(errs, registry.ValidateIntOrPercent(s.MinAvailable, spec.Child("minAvailable"))...)
	errs = append(errs, registry.AtMost100Percent(s.MinAvailable, spec.Child("minAvailable"))...)
	errs = append(errs, registry.ValidateIntOrPercent(s.MaxUnavailable, spec.Child("maxUnavailable"))...)
	errs = append(errs, registry.AtMost100Percent(s.MaxUnavailable, spec.Child("maxUnavailable"))...)
	if s.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, spec.Child("selector"))...)
	}
	policies := []policyv1.UnhealthyPodEvictionPolicyType{policyv1.AlwaysAllow, policyv1.IfHealthyBudget} // sorted, as kube names them
	if p := s.UnhealthyPodEvictionPolicy; p != nil && *p != policies[0] && *p != policies[1] {
		errs = append(errs, field.NotSupported(spec.Child("unhealthyPodEvictionPolicy"), *p, policies))
	}
	return errs
}

func intOrPercentText(v *intstr.IntOrString) string {
	if v == nil {
		return "N/A"
	}
	return v.String()
}
