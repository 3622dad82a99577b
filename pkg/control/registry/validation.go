package registry

import (
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Checks and defaults many kinds share.

// validateMeta checks an object's metadata with the kind's rule for names.
func validateMeta(obj runtime.Object, namespaced bool, name validation.ValidateNameFunc) field.ErrorList {
	return validation.ValidateObjectMetaAccessor(metaOf(obj), namespaced, name, field.NewPath("metadata"))
}

// validateIntOrPercent checks a count or percentage such as maxUnavailable: non-negative,
// a percentage at most 100% when capped.
func validateIntOrPercent(v *intstr.IntOrString, path *field.Path, capped bool) field.ErrorList {
	if v == nil {
		return nil
	}
	var errs field.ErrorList
	switch v.Type {
	case intstr.String:
		errs = append(errs, corevalidation.InvalidEach(path, v, utilvalidation.IsValidPercent(v.StrVal))...)
		if n, ok := percent(v); ok && capped && n > 100 {
			errs = append(errs, field.Invalid(path, v, "must not be greater than 100%"))
		}
	case intstr.Int:
		errs = append(errs, validation.ValidateNonnegativeField(int64(v.IntVal), path)...)
	default:
		errs = append(errs, field.Invalid(path, v, "must be an integer or percentage (e.g '5%')"))
	}
	return errs
}

func percent(v *intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || !strings.HasSuffix(v.StrVal, "%") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	return n, err == nil
}

// isZero tells whether a count or percentage is 0 or 0%.
func isZero(v *intstr.IntOrString) bool {
	if v == nil {
		return true
	}
	if n, ok := percent(v); ok {
		return n == 0
	}
	return v.Type == intstr.Int && v.IntVal == 0
}

func nonNegative(v *int32, path *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	return validation.ValidateNonnegativeField(int64(*v), path)
}

func immutable(newVal, oldVal any, path *field.Path) field.ErrorList {
	return validation.ValidateImmutableField(newVal, oldVal, path)
}

func int32Ptr(v int32) *int32 { return &v }

func defaultInt32(p **int32, v int32) {
	if *p == nil {
		*p = int32Ptr(v)
	}
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
