package corevalidation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A pod's scheduling constraints as kube's ValidatePodSpec checks them on create
// (pkg/apis/core/validation/validation.go: validateAffinity and
// validateTopologySpreadConstraints), with 1.36's gates at their defaults.

// validateAffinity is kube's validateAffinity.
func validateAffinity(a *corev1.Affinity, path *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := path.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			errs = append(errs, ValidateNodeSelector(req, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			errs = append(errs, validateWeight(term.Weight, tp.Child("weight"))...)
			// A preferred term may name any label value: kube lets it through.
			errs = append(errs, validateNodeSelectorTerm(term.Preference, true, tp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		p := path.Child("podAffinity")
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		errs = append(errs, validateWeightedPodAffinityTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		p := path.Child("podAntiAffinity")
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		errs = append(errs, validateWeightedPodAffinityTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	return errs
}

func validateWeight(weight int32, path *field.Path) field.ErrorList {
	if weight <= 0 || weight > 100 {
		return field.ErrorList{field.Invalid(path, weight, "must be in the range 1-100")}
	}
	return nil
}

// ValidateNodeSelector is kube's, for a pod's required node affinity and a
// PersistentVolume's.
func ValidateNodeSelector(s *corev1.NodeSelector, path *field.Path) field.ErrorList {
	termsPath := path.Child("nodeSelectorTerms")
	if len(s.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, term := range s.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(term, false, termsPath.Index(i))...)
	}
	return errs
}

// validateNodeSelectorTerm is kube's ValidateNodeSelectorTerm: label expressions, and field
// expressions of metadata.name only.
func validateNodeSelectorTerm(term corev1.NodeSelectorTerm, anyLabelValue bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, req := range term.MatchExpressions {
		errs = append(errs, validateNodeSelectorRequirement(req, anyLabelValue, path.Child("matchExpressions").Index(i))...)
	}
	for i, req := range term.MatchFields {
		p := path.Child("matchFields").Index(i)
		switch req.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(req.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		if req.Key != metav1.ObjectNameField {
			errs = append(errs, field.Invalid(p.Child("key"), req.Key, "not a valid field selector key"))
			continue
		}
		for j, v := range req.Values {
			errs = append(errs, InvalidEach(p.Child("values").Index(j), v, validation.NameIsDNSSubdomain(v, false))...)
		}
	}
	return errs
}

// validateNodeSelectorRequirement is kube's ValidateNodeSelectorRequirement.
func validateNodeSelectorRequirement(req corev1.NodeSelectorRequirement, anyLabelValue bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) == 0 {
			errs = append(errs, field.Required(path.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(req.Values) > 0 {
			errs = append(errs, field.Forbidden(path.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(req.Values) != 1 {
			errs = append(errs, field.Required(path.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, field.Invalid(path.Child("operator"), req.Operator, "not a valid selector operator"))
	}
	errs = append(errs, metav1validation.ValidateLabelName(req.Key, path.Child("key"))...)
	if !anyLabelValue {
		for i, v := range req.Values {
			errs = append(errs, InvalidEach(path.Child("values").Index(i), v, utilvalidation.IsValidLabelValue(v))...)
		}
	}
	return errs
}

func validatePodAffinityTerms(terms []corev1.PodAffinityTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, term := range terms {
		errs = append(errs, validatePodAffinityTerm(term, path.Index(i))...)
	}
	return errs
}

func validateWeightedPodAffinityTerms(terms []corev1.WeightedPodAffinityTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, term := range terms {
		errs = append(errs, validateWeight(term.Weight, path.Index(i).Child("weight"))...)
		errs = append(errs, validatePodAffinityTerm(term.PodAffinityTerm, path.Index(i).Child("podAffinityTerm"))...)
	}
	return errs
}

// validatePodAffinityTerm is kube's validatePodAffinityTerm: the selectors, the
// namespaces, the label keys and a topology key.
func validatePodAffinityTerm(term corev1.PodAffinityTerm, path *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := metav1validation.ValidateLabelSelector(term.LabelSelector, opts, path.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(term.NamespaceSelector, opts, path.Child("namespaceSelector"))...)
	for _, ns := range term.Namespaces {
		// kube names the field in the singular.
		errs = append(errs, InvalidEach(path.Child("namespace"), ns, validation.ValidateNamespaceName(ns, false))...)
	}
	errs = append(errs, validateMatchLabelKeys(path, term.MatchLabelKeys, term.MismatchLabelKeys, term.LabelSelector)...)
	if term.TopologyKey == "" {
		errs = append(errs, field.Required(path.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metav1validation.ValidateLabelName(term.TopologyKey, path.Child("topologyKey"))...)
}

// validateMatchLabelKeys is kube's ValidateMatchLabelKeysAndMismatchLabelKeys: label
// names, given only with a selector; a key of matchLabelKeys the selector already holds
// twice (kube reports it under path itself); none in both lists.
func validateMatchLabelKeys(path *field.Path, matchKeys, mismatchKeys []string, selector *metav1.LabelSelector) field.ErrorList {
	errs := validateLabelKeys(matchKeys, selector, path.Child("matchLabelKeys"))
	errs = append(errs, validateLabelKeys(mismatchKeys, selector, path.Child("mismatchLabelKeys"))...)
	if selector != nil {
		index := map[string]int{}
		for i, k := range matchKeys {
			index[k] = i
		}
		seen := sets.KeySet(selector.MatchLabels)
		for _, e := range selector.MatchExpressions {
			if i, ok := index[e.Key]; ok && seen.Has(e.Key) {
				errs = append(errs, field.Invalid(path.Index(i), e.Key, "exists in both matchLabelKeys and labelSelector"))
			}
			seen.Insert(e.Key)
		}
	}
	mismatch := sets.New(mismatchKeys...)
	for i, k := range matchKeys {
		if mismatch.Has(k) {
			errs = append(errs, field.Invalid(path.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	return errs
}

func validateLabelKeys(keys []string, selector *metav1.LabelSelector, path *field.Path) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	if selector == nil {
		return field.ErrorList{field.Forbidden(path, "must not be specified when labelSelector is not set")}
	}
	var errs field.ErrorList
	for i, k := range keys {
		errs = append(errs, metav1validation.ValidateLabelName(k, path.Index(i))...)
	}
	return errs
}

// whenUnsatisfiableActions and nodeInclusionPolicies are the values kube supports, sorted.
var (
	whenUnsatisfiableActions = []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}
	nodeInclusionPolicies    = []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}
)

// validateTopologySpreadConstraints is kube's validateTopologySpreadConstraints.
func validateTopologySpreadConstraints(constraints []corev1.TopologySpreadConstraint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range constraints {
		p := path.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		if !sets.New(whenUnsatisfiableActions...).Has(c.WhenUnsatisfiable) {
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, whenUnsatisfiableActions))
		}
		for _, later := range constraints[i+1:] {
			if c.TopologyKey == later.TopologyKey && c.WhenUnsatisfiable == later.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if m := c.MinDomains; m != nil {
			if *m <= 0 {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *m, "must be greater than zero"))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *m,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		errs = append(errs, validateNodeInclusionPolicy(c.NodeAffinityPolicy, p.Child("nodeAffinityPolicy"))...)
		errs = append(errs, validateNodeInclusionPolicy(c.NodeTaintsPolicy, p.Child("nodeTaintsPolicy"))...)
		errs = append(errs, validateMatchLabelKeys(p, c.MatchLabelKeys, nil, c.LabelSelector)...)
		errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	return errs
}

func validateNodeInclusionPolicy(policy *corev1.NodeInclusionPolicy, path *field.Path) field.ErrorList {
	if policy != nil && !sets.New(nodeInclusionPolicies...).Has(*policy) {
		return field.ErrorList{field.NotSupported(path, *policy, nodeInclusionPolicies)}
	}
	return nil
}
