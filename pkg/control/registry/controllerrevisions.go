package registry

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var controllerRevisionRules = Rules{
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateControllerRevision(obj.(*appsv1.ControllerRevision))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		r, o := obj.(*appsv1.ControllerRevision), old.(*appsv1.ControllerRevision)
		return append(validateControllerRevision(r), immutable(r.Data, o.Data, field.NewPath("data"))...)
	},
	Table: &TableDef{
		Columns: []metav1.TableColumnDefinition{
			nameColumn,
			column("Controller", "string", "Controller of the object", false),
			column("Revision", "string", appsv1.ControllerRevision{}.SwaggerDoc()["revision"], false),
			ageColumn,
		},
		Row: func(obj runtime.Object) []any {
			r := obj.(*appsv1.ControllerRevision)
			return []any{r.Name, controllerName(r), r.Revision, Age(r.CreationTimestamp)}
		},
	},
}

func validateControllerRevision(r *appsv1.ControllerRevision) field.ErrorList {
	errs := validateMeta(r, true, validation.NameIsDNSSubdomain)
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
