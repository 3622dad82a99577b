package policy

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPodDisruptionBudgetRules(t *testing.T) {
	two, half := intstr.FromInt32(2), intstr.FromString("150%")
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: registrytest.ObjMeta("pdb"), Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, MaxUnavailable: &half}}
	pdb.Status.DisruptionsAllowed = 4
	registrytest.ExpectErrors(t, "both bounds", registrytest.CreateSteps(PodDisruptionBudgetRules, pdb), "spec: FieldValueInvalid", "spec.maxUnavailable: FieldValueInvalid")
	if pdb.Status.DisruptionsAllowed != 0 {
		t.Error("status must be reset on create")
	}
	pdb.Spec.MaxUnavailable = nil
	if row := PodDisruptionBudgetRules.Table.Row(pdb); row[1] != "2" || row[2] != "N/A" {
		t.Errorf("pdb row: %v", row)
	}
}

// Both bounds set: kube-apiserver prints its internal spec, Go field names but the label
// selector (a type shared with the API) in its JSON.
func TestPodDisruptionBudgetBothBoundsValue(t *testing.T) {
	two, one := intstr.FromInt32(2), intstr.FromString("10%")
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: registrytest.ObjMeta("pdb"), Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, MaxUnavailable: &one,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	registrytest.ExpectMessages(t, "both bounds", registrytest.CreateSteps(PodDisruptionBudgetRules, pdb),
		`spec: Invalid value: {"MinAvailable":2,"Selector":{"matchLabels":{"app":"web"}},"MaxUnavailable":"10%","UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set`)
}

func TestUnhealthyPodEvictionPolicyErrorSorted(t *testing.T) {
	one, bogus := intstr.FromInt32(1), policyv1.UnhealthyPodEvictionPolicyType("Bogus")
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: registrytest.ObjMeta("pdb"), Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, UnhealthyPodEvictionPolicy: &bogus}}
	registrytest.ExpectMessage(t, registrytest.CreateSteps(PodDisruptionBudgetRules, pdb), "spec.unhealthyPodEvictionPolicy", `supported values: "AlwaysAllow", "IfHealthyBudget"`)
}
