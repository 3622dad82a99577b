package admissionregistration

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A policy's status write is checked as kube-apiserver v1.36.3 checks it (its answer to the
// same patch): the type checking's warnings and the conditions, and only those; a policy
// whose spec no longer compiles still takes its status.
func TestPolicyStatusValidation(t *testing.T) {
	rules, ok := ValidatingAdmissionPolicyRules.SubresourceUpdates["status"]
	if !ok {
		t.Fatal("ValidatingAdmissionPolicy has no status rules")
	}
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "vap1"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{{Expression: "not CEL ("}}}}
	old := p.DeepCopy()
	p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: -1,
		TypeChecking: &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{{}, {FieldRef: "spec.validations[0.expression", Warning: "w"}}},
		Conditions:   []metav1.Condition{{Type: "bad type!", Status: "Maybe"}}}
	registrytest.ExpectMessages(t, "status", rules.Validate(p, old),
		"status.typeChecking.expressionWarnings[0].warning: Required value",
		"status.typeChecking.expressionWarnings[0].fieldRef: Required value",
		`status.typeChecking.expressionWarnings[1].fieldRef: Invalid value: "spec.validations[0.expression": invalid JSONPath: unterminated array`,
		`status.conditions[0].type: Invalid value: "bad type!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		`status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"`,
		"status.conditions[0].lastTransitionTime: Required value",
		"status.conditions[0].reason: Required value")
	p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 1,
		TypeChecking: &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{{FieldRef: "spec.validations[0].expression", Warning: "w"}}}}
	registrytest.ExpectMessages(t, "a good status of a policy that does not compile", rules.Validate(p, old))
}
