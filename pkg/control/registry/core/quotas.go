package core

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/internal/resourcename"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/poddefaults"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var ResourceQuotaRules = registry.Rules{
	ReturnDeletedObject: true,
	PrepareCreate:       func(obj runtime.Object) { obj.(*corev1.ResourceQuota).Status = corev1.ResourceQuotaStatus{} },
	Default: func(obj runtime.Object) {
		q := obj.(*corev1.ResourceQuota)
		for _, l := range []corev1.ResourceList{q.Spec.Hard, q.Status.Hard, q.Status.Used} {
			poddefaults.ResourceList(l)
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		q := obj.(*corev1.ResourceQuota)
		return append(registry.ValidateMeta(q, true, validation.NameIsDNSSubdomain), validateResourceQuota(q)...)
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		q, oldQ := obj.(*corev1.ResourceQuota), old.(*corev1.ResourceQuota)
		errs := validateResourceQuota(q)
		if !sets.New(q.Spec.Scopes...).Equal(sets.New(oldQ.Spec.Scopes...)) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "scopes"), q.Spec.Scopes, "field is immutable"))
		}
		return errs
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume.", false),
			registry.Column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.", false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			q := obj.(*corev1.ResourceQuota)
			names := make([]string, 0, len(q.Status.Hard))
			for name := range q.Status.Hard {
				names = append(names, string(name))
			}
			sort.Strings(names)
			var requests, limits []string
			for _, name := range names {
				used, hard := q.Status.Used[corev1.ResourceName(name)], q.Status.Hard[corev1.ResourceName(name)]
				cell := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
				if strings.HasPrefix(name, "limits.") {
					limits = append(limits, cell)
				} else {
					requests = append(requests, cell)
				}
			}
			return []any{q.Name, strings.Join(requests, ", "), strings.Join(limits, ", "), registry.Age(q.CreationTimestamp)}
		},
	},
}

// validateResourceQuota is kube's ValidateResourceQuota less the metadata: the names a
// quota can limit with their values, in spec and status, and the scopes.
func validateResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	spec := field.NewPath("spec")
	errs := validateQuotaList(q.Spec.Hard, spec.Child("hard"))
	errs = append(errs, validateQuotaScopes(&q.Spec, spec.Child("scopes"))...)
	if q.Spec.ScopeSelector != nil {
		errs = append(errs, validateScopeSelector(&q.Spec, spec.Child("scopeSelector", "matchExpressions"))...)
	}
	errs = append(errs, validateQuotaList(q.Status.Hard, field.NewPath("status", "hard"))...)
	return append(errs, validateQuotaList(q.Status.Used, field.NewPath("status", "used"))...)
}

// validateQuotaList is kube's ValidateResourceQuotaResourceName and
// ValidateResourceQuantityValue for each entry.
func validateQuotaList(list corev1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(list)) {
		p, q := path.Key(string(name)), list[name]
		errs = append(errs, corevalidation.ValidateResourceName(name, p)...)
		if !strings.Contains(string(name), "/") && !resourcename.IsStandardQuota(name) { // kube adds it to a bad name's errors
			errs = append(errs, field.Invalid(p, name, "must be a standard resource for quota"))
		}
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
		if resourcename.IsInteger(name) && q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(p, q, "must be an integer"))
		}
	}
	return errs
}

// quotaScopes are the scopes kube knows (IsStandardResourceQuotaScope).
var quotaScopes = sets.New(corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopePriorityClass,
	corev1.ResourceQuotaScopeVolumeAttributesClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity)

// conflictingScopes are the pairs no quota may hold both of.
var conflictingScopes = [][2]corev1.ResourceQuotaScope{
	{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort},
	{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating},
}

// podCompute are the compute resources a quota of pods' scopes limits.
var podCompute = sets.New(corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceLimitsCPU,
	corev1.ResourceLimitsMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory)

// scopeFits is kube's IsResourceQuotaScopeValidForResource: which standard resources a
// scope can limit (a scope of pods limits pods and their compute, BestEffort pods only
// their count, VolumeAttributesClass claims).
func scopeFits(scope corev1.ResourceQuotaScope, name corev1.ResourceName) bool {
	switch scope {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return name == corev1.ResourcePods || podCompute.Has(name)
	case corev1.ResourceQuotaScopeBestEffort:
		return name == corev1.ResourcePods
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return name == corev1.ResourcePersistentVolumeClaims || name == corev1.ResourceRequestsStorage
	}
	return true
}

// conflicting tells whether scopes hold both of a pair no quota may hold.
func conflicting(scopes []corev1.ResourceQuotaScope) bool {
	return slices.ContainsFunc(conflictingScopes, func(pair [2]corev1.ResourceQuotaScope) bool {
		return slices.Contains(scopes, pair[0]) && slices.Contains(scopes, pair[1])
	})
}

// misappliedScope is kube's refusal of a scope for each of the quota's standard resources
// it cannot limit.
func misappliedScope(scope corev1.ResourceQuotaScope, hard corev1.ResourceList, path *field.Path, bad any) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(hard)) {
		if resourcename.IsStandardQuota(name) && !scopeFits(scope, name) {
			errs = append(errs, field.Invalid(path, bad, "unsupported scope applied to resource"))
		}
	}
	return errs
}

func validateQuotaScopes(spec *corev1.ResourceQuotaSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, scope := range spec.Scopes {
		if !quotaScopes.Has(scope) {
			errs = append(errs, field.Invalid(path, spec.Scopes, "unsupported scope"))
		}
		errs = append(errs, misappliedScope(scope, spec.Hard, path, spec.Scopes)...)
	}
	if conflicting(spec.Scopes) {
		errs = append(errs, field.Invalid(path, spec.Scopes, "conflicting scopes"))
	}
	return errs
}

// existsOnlyScopes are the scopes a scope selector may only ask to exist.
var existsOnlyScopes = sets.New(corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
	corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity)

// validateScopeSelector is kube's validateScopedResourceSelectorRequirement, path being
// the selector's matchExpressions.
func validateScopeSelector(spec *corev1.ResourceQuotaSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	var scopes []corev1.ResourceQuotaScope
	for _, req := range spec.ScopeSelector.MatchExpressions {
		if !quotaScopes.Has(req.ScopeName) {
			errs = append(errs, field.Invalid(path.Child("scopeName"), req.ScopeName, "unsupported scope"))
		}
		errs = append(errs, misappliedScope(req.ScopeName, spec.Hard, path, spec.ScopeSelector)...)
		if existsOnlyScopes.Has(req.ScopeName) && req.Operator != corev1.ScopeSelectorOpExists {
			errs = append(errs, field.Invalid(path.Child("operator"), req.Operator,
				"must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
		}
		switch req.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(path.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				errs = append(errs, field.Invalid(path.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			errs = append(errs, field.Invalid(path.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		scopes = append(scopes, req.ScopeName)
	}
	if conflicting(scopes) {
		errs = append(errs, field.Invalid(path, spec.Scopes, "conflicting scopes"))
	}
	return errs
}

var LimitRangeRules = registry.Rules{
	Default: func(obj runtime.Object) {
		for i := range obj.(*corev1.LimitRange).Spec.Limits {
			item := &obj.(*corev1.LimitRange).Spec.Limits[i]
			defaultLimitRangeItem(item)
			for _, l := range []corev1.ResourceList{item.Max, item.Min, item.Default, item.DefaultRequest, item.MaxLimitRequestRatio} {
				poddefaults.ResourceList(l)
			}
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList { return validateLimitRange(obj.(*corev1.LimitRange)) },
	Table:    registry.CreatedAtTable,
}

// defaultLimitRangeItem: a container's default limit is its max, its default request its
// default limit or else its min.
func defaultLimitRangeItem(item *corev1.LimitRangeItem) {
	if item.Type != corev1.LimitTypeContainer {
		return
	}
	if item.Default == nil {
		item.Default = corev1.ResourceList{}
	}
	if item.DefaultRequest == nil {
		item.DefaultRequest = corev1.ResourceList{}
	}
	fill := func(dst, src corev1.ResourceList) {
		for k, v := range src {
			if _, ok := dst[k]; !ok {
				dst[k] = v.DeepCopy()
			}
		}
	}
	fill(item.Default, item.Max)
	fill(item.DefaultRequest, item.Default)
	fill(item.DefaultRequest, item.Min)
}

func validateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	errs := registry.ValidateMeta(lr, true, validation.NameIsDNSSubdomain)
	types := sets.New[corev1.LimitType]()
	for i := range lr.Spec.Limits {
		item, path := &lr.Spec.Limits[i], field.NewPath("spec", "limits").Index(i)
		errs = append(errs, validateLimitType(item.Type, path.Child("type"))...)
		if types.Has(item.Type) {
			errs = append(errs, field.Duplicate(path.Child("type"), item.Type))
		}
		types.Insert(item.Type)
		lists := map[string]corev1.ResourceList{"max": item.Max, "min": item.Min, "default": item.Default,
			"defaultRequest": item.DefaultRequest, "maxLimitRequestRatio": item.MaxLimitRequestRatio}
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				errs = append(errs, field.Forbidden(path.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(path.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
			delete(lists, "default") // refused: kube checks no more of them
			delete(lists, "defaultRequest")
		}
		names := sets.New[corev1.ResourceName]()
		for _, list := range []string{"max", "min", "default", "defaultRequest", "maxLimitRequestRatio"} {
			for _, name := range slices.Sorted(maps.Keys(lists[list])) {
				errs = append(errs, validateLimitRangeResourceName(item.Type, name, path.Child(list).Key(string(name)))...)
				names.Insert(name)
			}
		}
		if item.Type == corev1.LimitTypePersistentVolumeClaim && !corevalidation.HasKey(item.Min, corev1.ResourceStorage) && !corevalidation.HasKey(item.Max, corev1.ResourceStorage) {
			errs = append(errs, field.Required(path.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
		}
		for _, name := range sets.List(names) {
			errs = append(errs, validateLimitRangeBounds(lists, name, path)...)
		}
	}
	return errs
}

// validateLimitRangeBounds is how kube's ValidateLimitRange relates one resource's min,
// max, default, default request and limit/request ratio in an item (lists by field name).
func validateLimitRangeBounds(lists map[string]corev1.ResourceList, name corev1.ResourceName, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	min, hasMin := lists["min"][name]
	max, hasMax := lists["max"][name]
	def, hasDef := lists["default"][name]
	req, hasReq := lists["defaultRequest"][name]
	ratio, hasRatio := lists["maxLimitRequestRatio"][name]
	key := func(list string) *field.Path { return path.Child(list).Key(string(name)) }
	if hasMin && hasMax && min.Cmp(max) > 0 {
		errs = append(errs, field.Invalid(key("min"), min, fmt.Sprintf("min value %s is greater than max value %s", min.String(), max.String())))
	}
	if hasReq && hasMin && min.Cmp(req) > 0 {
		errs = append(errs, field.Invalid(key("defaultRequest"), req, fmt.Sprintf("min value %s is greater than default request value %s", min.String(), req.String())))
	}
	if hasReq && hasMax && req.Cmp(max) > 0 {
		errs = append(errs, field.Invalid(key("defaultRequest"), req, fmt.Sprintf("default request value %s is greater than max value %s", req.String(), max.String())))
	}
	if hasReq && hasDef && req.Cmp(def) > 0 {
		errs = append(errs, field.Invalid(key("defaultRequest"), req, fmt.Sprintf("default request value %s is greater than default limit value %s", req.String(), def.String())))
	}
	if hasDef && hasMin && min.Cmp(def) > 0 {
		errs = append(errs, field.Invalid(key("default"), min, fmt.Sprintf("min value %s is greater than default value %s", min.String(), def.String())))
	}
	if hasDef && hasMax && def.Cmp(max) > 0 {
		errs = append(errs, field.Invalid(key("default"), max, fmt.Sprintf("default value %s is greater than max value %s", def.String(), max.String())))
	}
	if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
		errs = append(errs, field.Invalid(key("maxLimitRequestRatio"), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
	}
	if hasRatio && hasMin && hasMax {
		// In milli-units where they fit, as kube computes it.
		r, lo, hi := float64(ratio.Value()), min.Value(), max.Value()
		if ratio.Value() < resource.MaxMilliValue && lo < resource.MaxMilliValue && hi < resource.MaxMilliValue {
			r, lo, hi = float64(ratio.MilliValue())/1000, min.MilliValue(), max.MilliValue()
		}
		if limit := float64(hi) / float64(lo); r > limit {
			errs = append(errs, field.Invalid(key("maxLimitRequestRatio"), ratio, fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), limit)))
		}
	}
	if !resourcename.OvercommitAllowed(name) && hasDef && hasReq && def.Cmp(req) != 0 {
		errs = append(errs, field.Invalid(key("defaultRequest"), req, fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", def.String(), req.String(), name)))
	}
	return errs
}

// validateLimitType is kube's validateLimitRangeTypeName: a known type or a qualified one.
func validateLimitType(t corev1.LimitType, path *field.Path) field.ErrorList {
	if msgs := utilvalidation.IsQualifiedName(string(t)); len(msgs) > 0 {
		return corevalidation.InvalidEach(path, t, msgs)
	}
	switch t {
	case corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim:
		return nil
	}
	if !strings.Contains(string(t), "/") {
		return field.ErrorList{field.Invalid(path, t, "must be a standard limit type or fully qualified")}
	}
	return nil
}

// validateLimitRangeResourceName is kube's: a pod's or container's limits name what a
// container can request; other types any standard or qualified resource.
func validateLimitRangeResourceName(t corev1.LimitType, name corev1.ResourceName, path *field.Path) field.ErrorList {
	if t == corev1.LimitTypePod || t == corev1.LimitTypeContainer {
		return corevalidation.ValidateContainerResourceName(name, path)
	}
	return corevalidation.ValidateResourceName(name, path)
}
