package controlplane

import (
	"strings"
	"testing"
)

// TestFlowSchemaDanglingCondition: every FlowSchema gets the Dangling condition
// kube-apiserver's APF config consumer writes, so `kubectl get flowschemas` shows
// MISSINGPL False (not "?") for the bootstrap ones; a schema naming a missing priority
// level is True (NotFound) until the level is made.
func TestFlowSchemaDanglingCondition(t *testing.T) {
	c := startCluster(t)
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	waitFor(t, "the bootstrap schemas' Dangling condition", func() bool {
		return strings.HasSuffix(flat(c.mustKubectl(t, "", "get", "flowschema", "exempt")), " False")
	})
	c.mustKubectl(t, `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: orphan}
spec:
  priorityLevelConfiguration: {name: later}
  matchingPrecedence: 5000
  rules:
  - subjects: [{kind: Group, group: {name: nobody-here}}]
    resourceRules: [{verbs: ["*"], apiGroups: [""], resources: [pods], namespaces: ["*"]}]
`, "apply", "-f", "-")
	cond := func() string {
		return c.mustKubectl(t, "", "get", "flowschema", "orphan", "-o",
			`jsonpath={range .status.conditions[*]}{.type} {.status} {.reason} {.message}{end}`)
	}
	want := `Dangling True NotFound This FlowSchema references the PriorityLevelConfiguration object named "later" but there is no such object`
	waitFor(t, "Dangling True", func() bool { return cond() == want })
	c.mustKubectl(t, `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: later}
spec: {type: Limited, limited: {limitResponse: {type: Reject}}}
`, "apply", "-f", "-")
	want = `Dangling False Found This FlowSchema references the PriorityLevelConfiguration object named "later" and it exists`
	waitFor(t, "Dangling False", func() bool { return cond() == want })
	if out := c.mustKubectl(t, "", "get", "flowschema", "orphan", "-o", "jsonpath={.metadata.managedFields[*].manager}"); !strings.Contains(out, "api-priority-and-fairness-config-consumer-v1") {
		t.Errorf("managers of the schema: %s", out)
	}
}
