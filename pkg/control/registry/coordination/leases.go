// Package coordination holds the rules of coordination.k8s.io/v1 Leases, as Kubernetes'
// pkg/registry/coordination has them.
package coordination

import (
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validateLease(l *coordinationv1.Lease) field.ErrorList {
	return append(registry.ValidateMeta(l, true, validation.NameIsDNSSubdomain), validateLeaseSpec(&l.Spec)...)
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

var LeaseRules = registry.Rules{
	// As kube-apiserver with its CoordinatedLeaderElection gate off (its default): the
	// strategy and preferred holder are dropped, unless the stored Lease has them.
	PrepareCreate: func(obj runtime.Object) { dropCoordinatedFields(obj.(*coordinationv1.Lease), nil) },
	PrepareUpdate: func(obj, old runtime.Object) {
		dropCoordinatedFields(obj.(*coordinationv1.Lease), old.(*coordinationv1.Lease))
	},
	Validate: func(obj runtime.Object) field.ErrorList { return validateLease(obj.(*coordinationv1.Lease)) },
	ValidateUpdate: func(obj, _ runtime.Object) field.ErrorList {
		return validateLeaseSpec(&obj.(*coordinationv1.Lease).Spec)
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn, registry.Column("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"], false), registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			l := obj.(*coordinationv1.Lease)
			return []any{l.Name, registry.StringOr(l.Spec.HolderIdentity, ""), registry.Age(l.CreationTimestamp)}
		},
	},
}

func dropCoordinatedFields(l, old *coordinationv1.Lease) {
	if old == nil || old.Spec.Strategy == nil {
		l.Spec.Strategy = nil
	}
	if old == nil || old.Spec.PreferredHolder == nil {
		l.Spec.PreferredHolder = nil
	}
}
