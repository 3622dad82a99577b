package batch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kubernetes' limits on the per-index and success policies of a Job.
const (
	maxFailedIndexesLimit      = 100_000
	maxManagedByLength         = 63
	maxSuccessPolicyRules      = 20
	maxPodFailurePolicyRules   = 20
	maxOnExitCodesValues       = 255
	maxOnPodConditions         = 20
	maxIndexedParallelism      = 100_000
	maxSucceededIndexesLength  = 64 * 1024
	requiresIndexedCompletion  = "requires indexed completion mode"
	maxFailedIndexesHighLimit  = 10_000
	completionsSoftLimit       = 100_000
	parallelismHighCompletions = 10_000
)

// validateJobPolicies checks backoffLimitPerIndex, maxFailedIndexes, managedBy,
// podFailurePolicy and successPolicy as kube-apiserver does: the per-index and success
// policies need an Indexed Job, FailIndex needs backoffLimitPerIndex.
func validateJobPolicies(s *batchv1.JobSpec, path *field.Path) field.ErrorList {
	errs := registry.NonNegative(s.BackoffLimitPerIndex, path.Child("backoffLimitPerIndex"))
	errs = append(errs, registry.NonNegative(s.MaxFailedIndexes, path.Child("maxFailedIndexes"))...)
	indexed := s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion
	if m := s.MaxFailedIndexes; m != nil {
		if s.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(path.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
		if indexed && s.Completions != nil && *m > *s.Completions {
			errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *m, "must be less than or equal to completions"))
		}
		if *m > maxFailedIndexesLimit {
			errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *m, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesLimit)))
		}
	}
	if indexed && s.BackoffLimitPerIndex != nil && s.Completions != nil && *s.Completions > completionsSoftLimit {
		if s.MaxFailedIndexes == nil {
			errs = append(errs, field.Required(path.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
		} else if *s.MaxFailedIndexes > maxFailedIndexesHighLimit {
			errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *s.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", maxFailedIndexesHighLimit, completionsSoftLimit)))
		}
		if s.Parallelism != nil && *s.Parallelism > parallelismHighCompletions {
			errs = append(errs, field.Invalid(path.Child("parallelism"), *s.Parallelism, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", parallelismHighCompletions, completionsSoftLimit)))
		}
	}
	if !indexed {
		if s.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(path.Child("backoffLimitPerIndex"), *s.BackoffLimitPerIndex, requiresIndexedCompletion))
		}
		if s.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *s.MaxFailedIndexes, requiresIndexedCompletion))
		}
	}
	if m := s.ManagedBy; m != nil {
		errs = append(errs, utilvalidation.IsDomainPrefixedPath(path.Child("managedBy"), *m)...)
		if len(*m) > maxManagedByLength {
			errs = append(errs, field.TooLong(path.Child("managedBy"), "", maxManagedByLength))
		}
	}
	if s.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(s, path.Child("podFailurePolicy", "rules"))...)
	}
	if r := s.PodReplacementPolicy; r != nil {
		supported := []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}
		if s.PodFailurePolicy != nil {
			supported = supported[:1] // a podFailurePolicy judges only pods that have failed
		}
		if !slices.Contains(supported, *r) {
			errs = append(errs, field.NotSupported(path.Child("podReplacementPolicy"), *r, supported))
		}
	}
	if s.SuccessPolicy != nil {
		if !indexed {
			errs = append(errs, field.Invalid(path.Child("successPolicy"), *s.SuccessPolicy, requiresIndexedCompletion))
		} else {
			errs = append(errs, validateSuccessPolicy(s, path.Child("successPolicy", "rules"))...)
		}
	}
	return errs
}

// What a podFailurePolicy rule may say, sorted as kube-apiserver lists them.
var (
	podFailurePolicyActions = []batchv1.PodFailurePolicyAction{batchv1.PodFailurePolicyActionCount,
		batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore}
	onExitCodesOperators    = []batchv1.PodFailurePolicyOnExitCodesOperator{batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn}
	onPodConditionsStatuses = []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}
)

// validatePodFailurePolicy checks the rules of a podFailurePolicy as kube-apiserver does.
func validatePodFailurePolicy(s *batchv1.JobSpec, rules *field.Path) field.ErrorList {
	var errs field.ErrorList
	if n := len(s.PodFailurePolicy.Rules); n > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rules, n, maxPodFailurePolicyRules))
	}
	containers := sets.New[string]()
	for _, c := range slices.Concat(s.Template.Spec.Containers, s.Template.Spec.InitContainers) {
		containers.Insert(c.Name)
	}
	for i, rule := range s.PodFailurePolicy.Rules {
		path := rules.Index(i)
		action := path.Child("action")
		switch {
		case rule.Action == "":
			errs = append(errs, field.Required(action, fmt.Sprintf("valid values: %q", podFailurePolicyActions)))
		case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
			if s.BackoffLimitPerIndex == nil {
				errs = append(errs, field.Invalid(action, rule.Action, "requires the backoffLimitPerIndex to be set"))
			}
		case !slices.Contains(podFailurePolicyActions, rule.Action):
			errs = append(errs, field.NotSupported(action, rule.Action, podFailurePolicyActions))
		}
		if rule.OnExitCodes != nil {
			errs = append(errs, validateOnExitCodes(rule.OnExitCodes, path.Child("onExitCodes"), containers)...)
		}
		errs = append(errs, validateOnPodConditions(rule.OnPodConditions, path.Child("onPodConditions"))...)
		switch conditions := len(rule.OnPodConditions) > 0; {
		case rule.OnExitCodes != nil && conditions:
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
		case rule.OnExitCodes == nil && !conditions:
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
		}
	}
	return errs
}

func validateOnExitCodes(r *batchv1.PodFailurePolicyOnExitCodesRequirement, path *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	switch operator := path.Child("operator"); {
	case r.Operator == "":
		errs = append(errs, field.Required(operator, fmt.Sprintf("valid values: %q", onExitCodesOperators)))
	case !slices.Contains(onExitCodesOperators, r.Operator):
		errs = append(errs, field.NotSupported(operator, r.Operator, onExitCodesOperators))
	}
	if r.ContainerName != nil && !containers.Has(*r.ContainerName) {
		errs = append(errs, field.Invalid(path.Child("containerName"), *r.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	values := path.Child("values")
	switch n := len(r.Values); {
	case n == 0:
		errs = append(errs, field.Invalid(values, r.Values, "at least one value is required"))
	case n > maxOnExitCodesValues:
		errs = append(errs, field.TooMany(values, n, maxOnExitCodesValues))
	}
	seen := sets.New[int32]()
	for i, v := range r.Values {
		if r.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(values.Index(i), v, "must not be 0 for the In operator"))
		}
		if seen.Has(v) {
			errs = append(errs, field.Duplicate(values.Index(i), v))
		}
		seen.Insert(v)
	}
	if !slices.IsSorted(r.Values) {
		errs = append(errs, field.Invalid(values, r.Values, "must be ordered"))
	}
	return errs
}

func validateOnPodConditions(patterns []batchv1.PodFailurePolicyOnPodConditionsPattern, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if n := len(patterns); n > maxOnPodConditions {
		errs = append(errs, field.TooMany(path, n, maxOnPodConditions))
	}
	for i, p := range patterns {
		errs = append(errs, corevalidation.InvalidEach(path.Index(i).Child("type"), string(p.Type), utilvalidation.IsQualifiedName(string(p.Type)))...)
		switch status := path.Index(i).Child("status"); {
		case p.Status == "":
			errs = append(errs, field.Required(status, fmt.Sprintf("valid values: %q", onPodConditionsStatuses)))
		case !slices.Contains(onPodConditionsStatuses, p.Status):
			errs = append(errs, field.NotSupported(status, p.Status, onPodConditionsStatuses))
		}
	}
	return errs
}

func validateSuccessPolicy(s *batchv1.JobSpec, rules *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch n := len(s.SuccessPolicy.Rules); {
	case n == 0:
		errs = append(errs, field.Required(rules, "at least one rules must be specified when the successPolicy is specified"))
	case n > maxSuccessPolicyRules:
		errs = append(errs, field.TooMany(rules, n, maxSuccessPolicyRules))
	}
	completions := registry.Deref(s.Completions)
	for i, rule := range s.SuccessPolicy.Rules {
		path := rules.Index(i)
		if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
			errs = append(errs, field.Required(path, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		var total int32
		if ix := rule.SucceededIndexes; ix != nil {
			if len(*ix) > maxSucceededIndexesLength {
				errs = append(errs, field.TooLong(path.Child("succeededIndexes"), "", maxSucceededIndexesLength))
			}
			var err error
			if total, err = countIndexes(*ix, completions); err != nil {
				errs = append(errs, field.Invalid(path.Child("succeededIndexes"), *ix, "error parsing succeededIndexes: "+err.Error()))
			}
		}
		if c := rule.SucceededCount; c != nil {
			errs = append(errs, registry.NonNegative(c, path.Child("succeededCount"))...)
			if *c > completions {
				errs = append(errs, field.Invalid(path.Child("succeededCount"), *c, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			}
			if rule.SucceededIndexes != nil && *c > total {
				errs = append(errs, field.Invalid(path.Child("succeededCount"), *c, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
			}
		}
	}
	return errs
}

// countIndexes reads an index list ("0,2-4") as Kubernetes requires it, increasing and
// below completions, and counts its indexes.
func countIndexes(list string, completions int32) (int32, error) {
	if list == "" {
		return 0, nil
	}
	var total int32
	last := int32(-1)
	for _, part := range strings.Split(list, ",") {
		lo, hi, err := indexInterval(part, completions)
		if err != nil {
			return 0, err
		}
		if last >= lo {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, lo)
		}
		total += hi - lo + 1
		last = hi
	}
	return total, nil
}

// indexInterval reads one interval of an index list: "3" or "2-4".
func indexInterval(part string, completions int32) (lo, hi int32, err error) {
	bounds := strings.Split(part, "-")
	if len(bounds) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", part)
	}
	var lohi [2]int32
	for i, b := range bounds {
		n, err := strconv.Atoi(b)
		if err != nil {
			return 0, 0, fmt.Errorf("cannot convert string to integer for index: %q", b)
		}
		if n >= int(completions) {
			return 0, 0, fmt.Errorf("too large index: %q", b)
		}
		lohi[i] = int32(n)
	}
	lo, hi = lohi[0], lohi[0]
	if len(bounds) == 2 {
		if hi = lohi[1]; lo >= hi {
			return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", lo, hi)
		}
	}
	return lo, hi, nil
}

// indexesOverlap finds the first index in both lists, walking their intervals in order
// as kube does; an interval that does not parse is passed over (its format is refused
// on its own).
func indexesOverlap(completed, failed string, completions int32) (int32, bool) {
	if completed == "" || failed == "" {
		return 0, false
	}
	type interval struct {
		lo, hi int32
		err    error
	}
	read := func(list string) []interval {
		var out []interval
		for _, part := range strings.Split(list, ",") {
			lo, hi, err := indexInterval(part, completions)
			out = append(out, interval{lo, hi, err})
		}
		return out
	}
	cs, fs := read(completed), read(failed)
	for len(cs) > 0 && len(fs) > 0 {
		c, f := cs[0], fs[0]
		switch {
		case c.err != nil:
			cs = cs[1:]
		case f.err != nil:
			fs = fs[1:]
		case c.lo <= f.hi && f.lo <= c.hi:
			return max(c.lo, f.lo), true
		case c.lo <= f.lo:
			cs = cs[1:]
		default:
			fs = fs[1:]
		}
	}
	return 0, false
}
