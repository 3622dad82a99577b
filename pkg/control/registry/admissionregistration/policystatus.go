package admissionregistration

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"
)

// validatePolicyStatus is kube's ValidateValidatingAdmissionPolicyStatusUpdate: a status
// write checks only the type checking's warnings (each with a text and a JSONPath to the
// expression) and the conditions, not the spec.
func validatePolicyStatus(obj, _ runtime.Object) field.ErrorList {
	s := &obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Status
	path := field.NewPath("status")
	var errs field.ErrorList
	if tc := s.TypeChecking; tc != nil {
		for i, w := range tc.ExpressionWarnings {
			p := path.Child("typeChecking", "expressionWarnings").Index(i)
			if w.Warning == "" {
				errs = append(errs, field.Required(p.Child("warning"), ""))
			}
			errs = append(errs, validateFieldRef(w.FieldRef, p.Child("fieldRef"))...)
		}
	}
	return append(errs, metav1validation.ValidateConditions(s.Conditions, path.Child("conditions"))...)
}

// validateFieldRef: a warning's fieldRef parses as a JSONPath; nothing more is checked, so
// that a newer server's refs are kept on a rollback, as kube says.
func validateFieldRef(ref string, path *field.Path) field.ErrorList {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	if err := jsonpath.New("spec").Parse(fmt.Sprintf("{%s}", ref)); err != nil {
		return field.ErrorList{field.Invalid(path, ref, fmt.Sprintf("invalid JSONPath: %v", err))}
	}
	return nil
}
