package registry

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var resourceQuotaRules = Rules{
	PrepareCreate: func(obj runtime.Object) { obj.(*corev1.ResourceQuota).Status = corev1.ResourceQuotaStatus{} },
	Validate: func(obj runtime.Object) field.ErrorList {
		q := obj.(*corev1.ResourceQuota)
		errs := validateMeta(q, true, validation.NameIsDNSSubdomain)
		errs = append(errs, validateResourceList(q.Spec.Hard, field.NewPath("spec", "hard"))...)
		errs = append(errs, validateResourceList(q.Status.Hard, field.NewPath("status", "hard"))...)
		errs = append(errs, validateResourceList(q.Status.Used, field.NewPath("status", "used"))...)
		scopes := []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
			corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopePriorityClass,
			corev1.ResourceQuotaScopeCrossNamespacePodAffinity}
		for i, s := range q.Spec.Scopes {
			if !slices.Contains(scopes, s) {
				errs = append(errs, field.NotSupported(field.NewPath("spec", "scopes").Index(i), s, scopes))
			}
		}
		return errs
	},
	Table: &TableDef{
		Columns: []metav1.TableColumnDefinition{
			nameColumn,
			column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume.", false),
			column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.", false),
			ageColumn,
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
			return []any{q.Name, strings.Join(requests, ", "), strings.Join(limits, ", "), Age(q.CreationTimestamp)}
		},
	},
}

// validateResourceList checks resource names and that no quantity is negative.
func validateResourceList(list corev1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, q := range list {
		p := path.Key(string(name))
		errs = append(errs, metav1validation.ValidateLabelName(string(name), p)...)
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}

var limitRangeRules = Rules{
	Default: func(obj runtime.Object) {
		for i := range obj.(*corev1.LimitRange).Spec.Limits {
			defaultLimitRangeItem(&obj.(*corev1.LimitRange).Spec.Limits[i])
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList { return validateLimitRange(obj.(*corev1.LimitRange)) },
	Table:    createdAtTable,
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
	errs := validateMeta(lr, true, validation.NameIsDNSSubdomain)
	types := []corev1.LimitType{corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim}
	for i, item := range lr.Spec.Limits {
		path := field.NewPath("spec", "limits").Index(i)
		if !slices.Contains(types, item.Type) {
			errs = append(errs, field.NotSupported(path.Child("type"), item.Type, types))
		}
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				errs = append(errs, field.Forbidden(path.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(path.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		}
		for _, l := range []struct {
			name string
			list corev1.ResourceList
		}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}} {
			errs = append(errs, validateResourceList(l.list, path.Child(l.name))...)
		}
		for name, max := range item.Max {
			p := path.Child("max").Key(string(name))
			if min, ok := item.Min[name]; ok && min.Cmp(max) > 0 {
				errs = append(errs, field.Invalid(path.Child("min").Key(string(name)), min.String(), fmt.Sprintf("min value %s is greater than max value %s", min.String(), max.String())))
			}
			for _, d := range []struct {
				name string
				q    resource.Quantity
				ok   bool
			}{{"default", item.Default[name], hasKey(item.Default, name)}, {"defaultRequest", item.DefaultRequest[name], hasKey(item.DefaultRequest, name)}} {
				if d.ok && d.q.Cmp(max) > 0 {
					errs = append(errs, field.Invalid(p, max.String(), fmt.Sprintf("%s value %s is greater than max value %s", d.name, d.q.String(), max.String())))
				}
			}
		}
	}
	return errs
}

func hasKey(list corev1.ResourceList, name corev1.ResourceName) bool {
	_, ok := list[name]
	return ok
}
