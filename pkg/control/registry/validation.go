package registry

import (
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Checks and defaults many kinds share.

// ValidateMeta checks an object's metadata with the kind's rule for names.
func ValidateMeta(obj runtime.Object, namespaced bool, name validation.ValidateNameFunc) field.ErrorList {
	return validation.ValidateObjectMetaAccessor(MetaOf(obj), namespaced, name, field.NewPath("metadata"))
}

// ValidateIntOrPercent checks a count or percentage such as maxUnavailable is one and not
// negative, kube's ValidatePositiveIntOrPercent.
func ValidateIntOrPercent(v *intstr.IntOrString, path *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	switch v.Type {
	case intstr.String:
		return corevalidation.InvalidEach(path, v, utilvalidation.IsValidPercent(v.StrVal))
	case intstr.Int:
		return validation.ValidateNonnegativeField(int64(v.IntVal), path)
	}
	return field.ErrorList{field.Invalid(path, v, "must be an integer or percentage (e.g '5%%')")}
}

// AtMost100Percent refuses a percentage over 100%, kube's IsNotMoreThan100Percent.
func AtMost100Percent(v *intstr.IntOrString, path *field.Path) field.ErrorList {
	if n, ok := percent(v); ok && n > 100 {
		return field.ErrorList{field.Invalid(path, v, "must not be greater than 100%")}
	}
	return nil
}

// percent is a valid percentage's number.
func percent(v *intstr.IntOrString) (int, bool) {
	if v == nil || v.Type != intstr.String || len(utilvalidation.IsValidPercent(v.StrVal)) != 0 {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	return n, err == nil
}

// IsZero tells whether a count or percentage counts as 0 where kube's validation compares
// it with 0 (its getIntOrPercentValue): 0, 0%, nil, and also a string that is no valid
// percentage and no number ("abc", "-5%"), which kube reads as 0.
func IsZero(v *intstr.IntOrString) bool {
	if v == nil {
		return true
	}
	if n, ok := percent(v); ok {
		return n == 0
	}
	return v.IntValue() == 0
}

// NonNegative refuses a negative *v.
func NonNegative(v *int32, path *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	return validation.ValidateNonnegativeField(int64(*v), path)
}

// Immutable refuses a change of a field that may not change.
func Immutable(newVal, oldVal any, path *field.Path) field.ErrorList {
	return validation.ValidateImmutableField(newVal, oldVal, path)
}

// Int32Ptr returns a pointer to v.
func Int32Ptr(v int32) *int32 { return &v }

// DefaultInt32 sets *p to v if unset.
func DefaultInt32(p **int32, v int32) {
	if *p == nil {
		*p = Int32Ptr(v)
	}
}

// Deref is *p, 0 when p is nil.
func Deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// ValidatePort checks a port number (1-65535).
func ValidatePort(port int32, path *field.Path) field.ErrorList {
	return corevalidation.InvalidEach(path, port, utilvalidation.IsValidPortNum(int(port)))
}

// ValidateResourceList checks resource names and that no quantity is negative.
func ValidateResourceList(list corev1.ResourceList, path *field.Path) field.ErrorList {
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

// ServiceProtocols are the protocols a Service, Endpoints or EndpointSlice port may have,
// sorted as kube's errors name them (sets.List).
var ServiceProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

// DefaultVolumeMode defaults a volume mode to Filesystem.
func DefaultVolumeMode(m **corev1.PersistentVolumeMode) {
	if *m == nil {
		fs := corev1.PersistentVolumeFilesystem
		*m = &fs
	}
}

// standardFinalizers are the finalizer names that need no domain (core helper's).
var standardFinalizers = sets.New(string(corev1.FinalizerKubernetes), metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents)

// KubeFinalizerNameErrors is core validation's validateKubeFinalizerName: a name without a
// "/" must be a standard one.
func KubeFinalizerNameErrors(name string, path *field.Path) field.ErrorList {
	if strings.Contains(name, "/") || standardFinalizers.Has(name) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, name, "name is neither a standard finalizer name nor is it fully qualified")}
}
