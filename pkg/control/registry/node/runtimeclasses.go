// Package node holds the rules of node.k8s.io/v1 RuntimeClasses, as Kubernetes'
// pkg/registry/node has them.
package node

import (
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
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
	errs = append(errs, corevalidation.InvalidEach(field.NewPath("handler"), rc.Handler, utilvalidation.IsDNS1123Label(rc.Handler))...)
	if rc.Overhead != nil {
		errs = append(errs, registry.ValidateResourceList(rc.Overhead.PodFixed, field.NewPath("overhead", "podFixed"))...)
	}
	if rc.Scheduling != nil {
		errs = append(errs, metav1validation.ValidateLabels(rc.Scheduling.NodeSelector, field.NewPath("scheduling", "nodeSelector"))...)
	}
	return errs
}
