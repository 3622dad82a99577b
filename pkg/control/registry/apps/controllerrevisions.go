package apps

import (
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var ControllerRevisionRules = registry.Rules{
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateControllerRevision(obj.(*appsv1.ControllerRevision))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		r, o := obj.(*appsv1.ControllerRevision), old.(*appsv1.ControllerRevision)
		return append(validateControllerRevision(r), registry.Immutable(r.Data, o.Data, field.NewPath("data"))...)
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Controller", "string", "Controller of the object", false),
			registry.Column("Revision", "string", appsv1.ControllerRevision{}.SwaggerDoc()["revision"], false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			r := obj.(*appsv1.ControllerRevision)
			return []any{r.Name, controllerName(r), r.Revision, registry.Age(r.CreationTimestamp)}
		},
	},
}

func validateControllerRevision(r *appsv1.ControllerRevision) field.ErrorList {
	errs := registry.ValidateMeta(r, true, validation.NameIsDNSSubdomain)
	if r.Data.Raw == nil && r.Data.Object == nil {
		errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return append(errs, validation.ValidateNonnegativeField(r.Revision, field.NewPath("revision"))...)
}

// controllerName is the CONTROLLER column: "statefulset.apps/web", "<none>" without one.
func controllerName(obj metav1.Object) string {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		return "<none>"
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ref.Name
	}
	return strings.ToLower(gv.WithKind(ref.Kind).GroupKind().String()) + "/" + ref.Name
}
