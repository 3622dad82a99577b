package flowcontrol

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func expectMessages(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	if got := registrytest.Messages(errs); !slices.Equal(got, want) {
		t.Errorf("%s: errors\n%q, want\n%q", what, got, want)
	}
}

// TestFlowControlErrorsAsKube: values in errors print as kube-apiserver 1.36 printed them
// (its internal types' Go field names), and a limited level's errors come in its order.
func TestFlowControlErrorsAsKube(t *testing.T) {
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "fs-dm"}, Spec: flowcontrolv1.FlowSchemaSpec{
		PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "global-default"},
		MatchingPrecedence:         500,
		DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: "Foo"},
	}}
	expectMessages(t, "distinguisher", registrytest.CreateSteps(FlowSchemaRules, fs),
		`spec.distinguisherMethod.type: Unsupported value: {"Type":"Foo"}: supported values: "ByNamespace", "ByUser"`)

	fs = &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "exempt"}, Spec: flowcontrolv1.FlowSchemaSpec{
		PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "exempt"},
		MatchingPrecedence:         9000,
		Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: "a", Namespace: "b"}}},
			ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"}}},
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}}},
		}},
	}}
	expectMessages(t, "mandatory schema", registrytest.CreateSteps(FlowSchemaRules, fs),
		`spec: Invalid value: {"PriorityLevelConfiguration":{"Name":"exempt"},"MatchingPrecedence":9000,"DistinguisherMethod":null,"Rules":[{"Subjects":[{"Kind":"ServiceAccount","User":null,"Group":null,"ServiceAccount":{"Namespace":"b","Name":"a"}}],"ResourceRules":[{"Verbs":["*"],"APIGroups":["*"],"Resources":["*"],"ClusterScope":true,"Namespaces":["*"]}],"NonResourceRules":[{"Verbs":["get"],"NonResourceURLs":["/x"]}]}]}: spec of 'exempt' must equal the fixed value`)

	pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "catch-all"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type:    flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](7), LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}},
	}}
	expectMessages(t, "mandatory level", registrytest.CreateSteps(PriorityLevelRules, pl),
		`spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":7,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":0,"BorrowingLimitPercent":null},"Exempt":null}: spec of 'catch-all' must equal the fixed value`)

	pl = &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "pl-lim"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](-1), LendablePercent: ptr.To[int32](101),
			BorrowingLimitPercent: ptr.To[int32](-1), LimitResponse: flowcontrolv1.LimitResponse{Type: "Foo"}},
	}}
	expectMessages(t, "limited level", registrytest.CreateSteps(PriorityLevelRules, pl),
		`spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer`,
		`spec.limited.limitResponse.type: Unsupported value: "Foo": supported values: "Queue", "Reject"`,
		`spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive`,
		`spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer`)
}

// TestFlowControlStatusConditionErrors: a second condition without a type is both a
// duplicate and missing its type, as kube reports it.
func TestFlowControlStatusConditionErrors(t *testing.T) {
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Spec: flowcontrolv1.FlowSchemaSpec{
		PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "global-default"},
		MatchingPrecedence:         500,
	}}
	fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: ""}, {Type: ""}}
	expectMessages(t, "conditions", FlowSchemaRules.Validate(fs),
		`status.conditions[0].type: Required value`,
		`status.conditions[1].type: Duplicate value: ""`,
		`status.conditions[1].type: Required value`)
}
