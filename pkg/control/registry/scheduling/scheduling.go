// Package scheduling holds the rules of scheduling.k8s.io/v1 PriorityClasses and the
// system priority classes every cluster has, as Kubernetes' pkg/registry/scheduling has them.
package scheduling

import (
	"errors"
	"fmt"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// systemPriorityClassPrefix is reserved for the priority classes every cluster has.
	systemPriorityClassPrefix = "system-"
	// highestUserPriority is the highest value a user-defined priority class may have.
	highestUserPriority = 1000000000
)

// SystemPriorityClasses are the priority classes every Kubernetes cluster has; miniapi
// creates them at bootstrap.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000,
			Description: "Used for system critical pods that must not be moved from their current node."},
		{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: 2000000000,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
	}
}

var PriorityClassRules = registry.Rules{
	// generation 1 on create, never bumped, as kube's priorityClassStrategy.PrepareForCreate
	PrepareCreate: func(obj runtime.Object) { obj.(*schedulingv1.PriorityClass).Generation = 1 },
	Default: func(obj runtime.Object) {
		pc := obj.(*schedulingv1.PriorityClass)
		if pc.PreemptionPolicy == nil {
			p := corev1.PreemptLowerPriority
			pc.PreemptionPolicy = &p
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validatePriorityClass(obj.(*schedulingv1.PriorityClass))
	},
	RefuseDelete: func(name string) error {
		for _, system := range SystemPriorityClasses() {
			if name == system.Name {
				return apierrors.NewForbidden(schedulingv1.Resource("priorityclasses"), name, errors.New("this is a system priority class and cannot be deleted"))
			}
		}
		return nil
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		pc, o := obj.(*schedulingv1.PriorityClass), old.(*schedulingv1.PriorityClass)
		errs := validatePriorityClass(pc)
		if pc.Value != o.Value {
			errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
		}
		return append(errs, registry.Immutable(pc.PreemptionPolicy, o.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.IntegerColumn("Value", schedulingv1.PriorityClass{}.SwaggerDoc()["value"]),
			registry.Column("Global-Default", "boolean", schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"], false),
			registry.AgeColumn,
			registry.Column("PreemptionPolicy", "string", schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"], false),
		},
		Row: func(obj runtime.Object) []any {
			pc := obj.(*schedulingv1.PriorityClass)
			policy := ""
			if pc.PreemptionPolicy != nil {
				policy = string(*pc.PreemptionPolicy)
			}
			return []any{pc.Name, int64(pc.Value), pc.GlobalDefault, registry.Age(pc.CreationTimestamp), policy}
		},
	},
}

func validatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	errs := registry.ValidateMeta(pc, false, validation.NameIsDNSSubdomain)
	if strings.HasPrefix(pc.Name, systemPriorityClassPrefix) {
		if err := checkSystemPriorityClass(pc); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+systemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > highestUserPriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %d", highestUserPriority)))
	}
	policies := []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}
	if p := pc.PreemptionPolicy; p != nil && *p != policies[0] && *p != policies[1] {
		errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, policies))
	}
	return errs
}

// checkSystemPriorityClass accepts a system- class only as Kubernetes defines it.
func checkSystemPriorityClass(pc *schedulingv1.PriorityClass) error {
	for _, known := range SystemPriorityClasses() {
		if known.Name != pc.Name {
			continue
		}
		if known.Value != pc.Value {
			return fmt.Errorf("value of %s PriorityClass must be %d", known.Name, known.Value)
		}
		if pc.GlobalDefault {
			return fmt.Errorf("globalDefault of %s PriorityClass must be false", known.Name)
		}
		return nil
	}
	return fmt.Errorf("%s is not a known system priority class", pc.Name)
}
