package registry

import (
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validateLease(l *coordinationv1.Lease) field.ErrorList {
	return append(validateMeta(l, true, validation.NameIsDNSSubdomain), validateLeaseSpec(&l.Spec)...)
}

// validateLeaseSpec checks a Lease's spec as kube's coordination validation does.
func validateLeaseSpec(s *coordinationv1.LeaseSpec) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if s.LeaseDurationSeconds != nil && *s.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseDurationSeconds"), *s.LeaseDurationSeconds, "must be greater than 0"))
	}
	if s.LeaseTransitions != nil && *s.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseTransitions"), *s.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if s.Strategy != nil {
		// kube names the strategy's path twice: spec.strategy.strategy.
		path := spec.Child("strategy", "strategy")
		strategies := []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}
		if !strings.Contains(string(*s.Strategy), "/") {
			if !slices.Contains(strategies, *s.Strategy) {
				errs = append(errs, field.NotSupported(path, *s.Strategy, strategies))
			}
		} else {
			errs = append(errs, corevalidation.InvalidEach(path, *s.Strategy, utilvalidation.IsQualifiedName(string(*s.Strategy)))...)
		}
	}
	if s.PreferredHolder != nil && *s.PreferredHolder != "" && (s.Strategy == nil || *s.Strategy == "") {
		errs = append(errs, field.Forbidden(spec.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}
