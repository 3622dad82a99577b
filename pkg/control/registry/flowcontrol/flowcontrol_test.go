package flowcontrol

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestFlowControlBootstrapValid: kube-apiserver's bootstrap objects pass our defaulting
// unchanged and our validation, as upstream's unit tests check of its own.
func TestFlowControlBootstrapValid(t *testing.T) {
	levels, schemas := BootstrapFlowControl()
	if len(levels) != 8 || len(schemas) != 11 {
		t.Fatalf("%d priority levels and %d flow schemas, want 8 and 11", len(levels), len(schemas))
	}
	for _, pl := range levels {
		obj := pl.DeepCopy()
		if errs := registrytest.CreateSteps(PriorityLevelRules, obj); len(errs) > 0 {
			t.Errorf("priority level %s: %v", pl.Name, errs.ToAggregate())
		}
		if !equality.Semantic.DeepEqual(obj.Spec, pl.Spec) {
			t.Errorf("priority level %s: defaulting changed the spec to %+v", pl.Name, obj.Spec)
		}
	}
	for _, fs := range schemas {
		if errs := registrytest.CreateSteps(FlowSchemaRules, fs.DeepCopy()); len(errs) > 0 {
			t.Errorf("flow schema %s: %v", fs.Name, errs.ToAggregate())
		}
	}
}

func TestFlowSchemaRules(t *testing.T) {
	fs := func() *flowcontrolv1.FlowSchema {
		return &flowcontrolv1.FlowSchema{
			ObjectMeta: metav1.ObjectMeta{Name: "mine"},
			Spec: flowcontrolv1.FlowSchemaSpec{
				PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "global-default"},
				Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
					Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}}},
					NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"/healthz", "/api/*"}}},
				}},
			},
			Status: flowcontrolv1.FlowSchemaStatus{Conditions: []flowcontrolv1.FlowSchemaCondition{{Type: "Dangling"}}},
		}
	}
	ok := fs()
	if errs := registrytest.CreateSteps(FlowSchemaRules, ok); len(errs) > 0 {
		t.Fatalf("valid schema: %v", errs.ToAggregate())
	}
	if ok.Spec.MatchingPrecedence != 1000 || len(ok.Status.Conditions) != 0 {
		t.Errorf("create: matchingPrecedence %d (want the default 1000), status %+v (want cleared)", ok.Spec.MatchingPrecedence, ok.Status)
	}

	bad := fs()
	bad.Spec.MatchingPrecedence = 1
	bad.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: "ByColour"}
	bad.Spec.PriorityLevelConfiguration.Name = ""
	bad.Spec.Rules[0].Subjects = append(bad.Spec.Rules[0].Subjects,
		flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: "*"}, Group: &flowcontrolv1.GroupSubject{Name: "g"}},
		flowcontrolv1.Subject{Kind: "Robot"})
	bad.Spec.Rules[0].NonResourceRules[0].NonResourceURLs = []string{"healthz", "/a*b"}
	bad.Status.Conditions[0].Type = ""
	bad.Spec.Rules[0].ResourceRules = []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"get", "fly"}, APIGroups: []string{"*", "apps"}, Resources: []string{"pods"}, Namespaces: []string{"Bad_NS"}}}
	registrytest.ExpectErrors(t, "invalid schema", FlowSchemaRules.Validate(bad),
		"spec.matchingPrecedence: FieldValueInvalid",
		"spec.distinguisherMethod.type: FieldValueNotSupported",
		"spec.priorityLevelConfiguration.name: FieldValueRequired",
		"spec.rules[0].subjects[1].serviceAccount.namespace: FieldValueRequired",
		"spec.rules[0].subjects[1].group: FieldValueForbidden",
		"spec.rules[0].subjects[2].kind: FieldValueNotSupported",
		"spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: FieldValueInvalid",
		"spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: FieldValueInvalid",
		"spec.rules[0].resourceRules[0].verbs: FieldValueNotSupported",
		"spec.rules[0].resourceRules[0].apiGroups: FieldValueInvalid",
		"spec.rules[0].resourceRules[0].namespaces[0]: FieldValueInvalid",
		"status.conditions[0].type: FieldValueRequired",
	)
	bad.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: "A"}, {Type: "A"}}
	registrytest.ExpectMessage(t, FlowSchemaRules.Validate(bad), "status.conditions[1].type", "Duplicate value")

	exempt := fs()
	exempt.Name = flowcontrolv1.FlowSchemaNameExempt
	registrytest.ExpectMessage(t, registrytest.CreateSteps(FlowSchemaRules, exempt), "spec", "spec of 'exempt' must equal the fixed value")
}

func TestPriorityLevelRules(t *testing.T) {
	pl := func() *flowcontrolv1.PriorityLevelConfiguration {
		return &flowcontrolv1.PriorityLevelConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "mine"},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
				Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
					LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}},
				},
			},
		}
	}
	ok := pl()
	if errs := registrytest.CreateSteps(PriorityLevelRules, ok); len(errs) > 0 {
		t.Fatalf("valid level: %v", errs.ToAggregate())
	}
	l := ok.Spec.Limited
	if *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || l.LimitResponse.Queuing.Queues != 64 ||
		l.LimitResponse.Queuing.HandSize != 8 || l.LimitResponse.Queuing.QueueLengthLimit != 50 {
		t.Errorf("defaults: %s", l.String())
	}

	bad := pl()
	bad.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{}
	bad.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](-1)
	bad.Spec.Limited.LendablePercent = ptr.To[int32](101)
	bad.Spec.Limited.LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 5, QueueLengthLimit: -1}
	registrytest.ExpectErrors(t, "invalid level", PriorityLevelRules.Validate(bad),
		"spec.exempt: FieldValueForbidden",
		"spec.limited.nominalConcurrencyShares: FieldValueInvalid",
		"spec.limited.lendablePercent: FieldValueInvalid",
		"spec.limited.limitResponse.queuing.queueLengthLimit: FieldValueInvalid",
		"spec.limited.limitResponse.queuing.handSize: FieldValueInvalid",
	)
	bad = pl()
	bad.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
		Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 1 << 20, HandSize: 64, QueueLengthLimit: 1}}
	registrytest.ExpectMessage(t, PriorityLevelRules.Validate(bad), "spec.limited.limitResponse.queuing.handSize", "required entropy bits")
	bad.Name = flowcontrolv1.PriorityLevelConfigurationNameExempt
	registrytest.ExpectMessage(t, PriorityLevelRules.Validate(bad), "spec.type", "must be 'Exempt' if and only if `name` is 'exempt'")

	// exempt's spec.exempt may change; catch-all's spec may not.
	levels, _ := BootstrapFlowControl()
	for _, m := range levels[:2] {
		obj := m.DeepCopy()
		if obj.Spec.Exempt != nil {
			obj.Spec.Exempt.NominalConcurrencyShares = ptr.To[int32](7)
			if errs := PriorityLevelRules.Validate(obj); len(errs) > 0 {
				t.Errorf("exempt with other shares: %v", errs.ToAggregate())
			}
			continue
		}
		obj.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](7)
		registrytest.ExpectMessage(t, PriorityLevelRules.Validate(obj), "spec", "spec of '"+obj.Name+"' must equal the fixed value")
	}
	annotated := pl()
	annotated.Annotations = map[string]string{"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""}
	registrytest.ExpectMessage(t, registrytest.CreateSteps(PriorityLevelRules, annotated), "metadata.annotations", "is forbidden")
}
