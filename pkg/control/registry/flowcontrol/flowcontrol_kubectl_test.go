package flowcontrol_test

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const flowControlObjects = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: batch}
spec:
  type: Limited
  limited:
    limitResponse: {type: Queue, queuing: {queues: 16}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: batch-jobs}
spec:
  priorityLevelConfiguration: {name: batch}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: batch-users}}]
    resourceRules: [{verbs: ["*"], apiGroups: [batch], resources: [jobs], namespaces: ["*"]}]
`

// TestFlowControlKubectl: miniapi serves flowcontrol.apiserver.k8s.io/v1 with
// kube-apiserver's bootstrap objects; the real kubectl lists them in kube's columns, applies
// new ones (defaulted as kube defaults them) and gets kube's validation message; the status
// subresource takes conditions the main resource does not, as the conformance test asks.
func TestFlowControlKubectl(t *testing.T) {
	testenv.RequireTools(t, "kubectl")
	c := controlplanetest.Start(t, nil)
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }

	got := flat(c.MustKubectl(t, "", "get", "flowschemas"))
	for _, want := range []string{"NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD AGE MISSINGPL",
		"exempt exempt 1 <none>", "system-leader-election leader-election 100 ByUser", "catch-all catch-all 10000 ByUser"} {
		if !strings.Contains(got, want) {
			t.Errorf("kubectl get flowschemas: no %q in\n%s", want, got)
		}
	}
	got = flat(c.MustKubectl(t, "", "get", "prioritylevelconfigurations"))
	for _, want := range []string{"NAME TYPE NOMINALCONCURRENCYSHARES QUEUES HANDSIZE QUEUELENGTHLIMIT AGE",
		"exempt Exempt <none> <none> <none> <none>", "catch-all Limited 5 <none> <none> <none>", "global-default Limited 20 128 6 50"} {
		if !strings.Contains(got, want) {
			t.Errorf("kubectl get prioritylevelconfigurations: no %q in\n%s", want, got)
		}
	}

	c.MustKubectl(t, flowControlObjects, "apply", "-f", "-")
	got = flat(c.MustKubectl(t, "", "get", "prioritylevelconfiguration", "batch"))
	if !strings.Contains(got, "batch Limited 30 16 8 50") {
		t.Errorf("defaulted priority level: %s", got)
	}
	got = flat(c.MustKubectl(t, "", "get", "flowschema", "batch-jobs"))
	if !strings.Contains(got, "batch-jobs batch 1000 ByUser") {
		t.Errorf("defaulted flow schema: %s", got)
	}
	bad := strings.Replace(strings.Split(flowControlObjects, "---")[0], "queues: 16", "queues: 16, handSize: 17", 1)
	if out, err := c.Kubectl(t, bad, "apply", "-f", "-"); err == nil || !strings.Contains(out, "spec.limited.limitResponse.queuing.handSize: Invalid value: 17: should not be greater than queues (16)") {
		t.Errorf("invalid priority level: err %v, output:\n%s", err, out)
	}
	if out, err := c.Kubectl(t, "", "patch", "prioritylevelconfiguration", "catch-all", "--type=merge", "-p", `{"spec":{"limited":{"nominalConcurrencyShares":9}}}`); err == nil || !strings.Contains(out, "spec of 'catch-all' must equal the fixed value") {
		t.Errorf("changing the mandatory catch-all: err %v, output:\n%s", err, out)
	}

	ctx, fs := context.Background(), c.Client.FlowcontrolV1().FlowSchemas()
	// (The flowschema-status controller may have written its own Dangling condition, reason Found.)
	cond := `{"status":{"conditions":[{"type":"Dangling","status":"False","reason":"Tested"}]}}`
	main, err := fs.Patch(ctx, "batch-jobs", types.MergePatchType, []byte(cond), metav1.PatchOptions{})
	if err != nil || len(main.Status.Conditions) > 1 || len(main.Status.Conditions) == 1 && main.Status.Conditions[0].Reason == "Tested" {
		t.Fatalf("status through the main resource: err %v, conditions %+v (want it unchanged)", err, main.Status.Conditions)
	}
	st, err := fs.Patch(ctx, "batch-jobs", types.MergePatchType, []byte(cond), metav1.PatchOptions{}, "status")
	if err != nil || len(st.Status.Conditions) != 1 || st.Status.Conditions[0].Type != flowcontrolv1.FlowSchemaConditionDangling ||
		st.Status.Conditions[0].Reason != "Tested" {
		t.Fatalf("status subresource: err %v, conditions %+v", err, st.Status.Conditions)
	}
	if got := flat(c.MustKubectl(t, "", "get", "flowschema", "batch-jobs")); !strings.HasSuffix(got, " False") {
		t.Errorf("MISSINGPL after the Dangling condition: %s", got)
	}
	if out := c.MustKubectl(t, "", "explain", "flowschema.spec.distinguisherMethod"); !strings.Contains(out, "ByUser") {
		t.Errorf("kubectl explain: %s", out)
	}
}
