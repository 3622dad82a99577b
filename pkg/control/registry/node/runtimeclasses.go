// Package node holds the rules of node.k8s.io/v1 RuntimeClasses, as Kubernetes'
// pkg/registry/node has them.
package node

import (
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RuntimeClasses (node.k8s.io/v1) are stored and validated as kube-apiserver's rules do,
// so clients and discovery find them; minilet does not act on them: it runs every pod with
// containerd's default handler.

var RuntimeClassRules = registry.Rules{
	Validate: func(obj runtime.Object) field.ErrorList { return validateRuntimeClass(obj.(*nodev1.RuntimeClass)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		rc, o := obj.(*nodev1.RuntimeClass), old.(*nodev1.RuntimeClass)
		return append(validateRuntimeClass(rc), registry.Immutable(rc.Handler, o.Handler, field.NewPath("handler"))...)
	},
	Warnings: func(obj, _ runtime.Object) []string {
		rc := obj.(*nodev1.RuntimeClass)
		return []string{fmt.Sprintf("minik8s runs every pod with containerd's default runtime: pods naming RuntimeClass %q do not get its handler %q (its overhead and scheduling apply)", rc.Name, rc.Handler)}
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{registry.NameColumn, registry.Column("Handler", "string", nodev1.RuntimeClass{}.SwaggerDoc()["handler"], false), registry.AgeColumn},
		Row: func(obj runtime.Object) []any {
			rc := obj.(*nodev1.RuntimeClass)
			return []any{rc.Name, rc.Handler, registry.Age(rc.CreationTimestamp)}
		},
	},
}

func validateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	errs := registry.ValidateMeta(rc, false, validation.NameIsDNSSubdomain)
	if rc.Handler == "" {
		errs = append(errs, field.Required(field.NewPath("handler"), ""))
	} else {
		errs = append(errs, corevalidation.InvalidEach(field.NewPath("handler"), rc.Handler, utilvalidation.IsDNS1123Label(rc.Handler))...)
	}
	if rc.Overhead != nil {
		errs = append(errs, corevalidation.ValidateOverhead(rc.Overhead.PodFixed, field.NewPath("overhead"))...)
	}
	if s := rc.Scheduling; s != nil {
		path := field.NewPath("scheduling")
		errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, path.Child("nodeSelector"))...)
		errs = append(errs, corevalidation.ValidateTolerations(s.Tolerations, path.Child("tolerations"))...)
		// Each toleration once, by the fields that key the list.
		seen := map[corev1.Toleration]bool{}
		for i, t := range s.Tolerations {
			key := corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
			if seen[key] {
				errs = append(errs, field.Duplicate(path.Child("tolerations").Index(i), internalToleration(t)))
			}
			seen[key] = true
		}
	}
	return errs
}

// internalToleration prints a toleration as kube's error does: its internal type, whose
// fields have no JSON names.
type internalToleration struct {
	Key               string
	Operator          corev1.TolerationOperator
	Value             string
	Effect            corev1.TaintEffect
	TolerationSeconds *int64
}
