package controlplane

import (
	"strings"
	"testing"
)

// TestPriorityAdmission: a pod's priorityClassName becomes spec.priority and
// preemptionPolicy at create (even a class created a moment before), a pod naming no class
// gets the globalDefault one (in a namespace whose LimitRange defaults its containers: the
// LimitRanger's defaulting set priority 0 before the Priority plugin ran, which then refused
// every pod), a missing class and a contradicting spec.priority are refused with
// Kubernetes' messages.
func TestPriorityAdmission(t *testing.T) {
	c := startCluster(t)
	c.mustKubectl(t, `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
preemptionPolicy: Never
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: fallback}
value: 7
globalDefault: true
---
apiVersion: v1
kind: LimitRange
metadata: {name: defaults}
spec: {limits: [{type: Container, default: {cpu: 100m}}]}
`, "apply", "-f", "-")
	pod := func(name, extra string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n" + extra +
			"  containers: [{name: app, image: localhost/minik8s/netexec:v1}]\n"
	}
	c.mustKubectl(t, pod("important", "  priorityClassName: high\n"), "apply", "-f", "-")
	if out := c.mustKubectl(t, "", "get", "pod", "important", "-o", "jsonpath={.spec.priority}/{.spec.preemptionPolicy}"); out != "1000/Never" {
		t.Errorf("pod with priorityClassName high: priority/policy %q, want 1000/Never", out)
	}
	// The globalDefault class is the shared informer's, as kube-apiserver's plugin reads its
	// lister: a pod created within moments of the class may miss it.
	waitFor(t, "the globalDefault class in the priority plugin's informer", func() bool {
		out, _ := c.kubectl(t, pod("probe", ""), "create", "--dry-run=server", "-o", "jsonpath={.spec.priority}", "-f", "-")
		return out == "7"
	})
	c.mustKubectl(t, pod("plain", ""), "apply", "-f", "-")
	if out := c.mustKubectl(t, "", "get", "pod", "plain", "-o", "jsonpath={.spec.priorityClassName}/{.spec.priority}"); out != "fallback/7" {
		t.Errorf("pod without a class: %q, want the globalDefault fallback/7", out)
	}
	c.mustKubectl(t, pod("critical", "  priorityClassName: system-node-critical\n"), "apply", "-f", "-")
	if out := c.mustKubectl(t, "", "get", "pod", "critical", "-o", "jsonpath={.spec.priority}"); out != "2000001000" {
		t.Errorf("system-node-critical pod: priority %q, want 2000001000", out)
	}
	out, err := c.kubectl(t, pod("lost", "  priorityClassName: nowhere\n"), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, `pods "lost" is forbidden: no PriorityClass with name nowhere was found`) {
		t.Errorf("pod naming a missing class: %v\n%s", err, out)
	}
	// The system classes cannot be deleted, as kube-apiserver's PriorityClass REST refuses.
	out, err = c.kubectl(t, "", "delete", "priorityclass", "system-node-critical")
	if err == nil || !strings.Contains(out, `priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted`) {
		t.Errorf("deleting system-node-critical: %v\n%s", err, out)
	}
	out, err = c.kubectl(t, pod("liar", "  priorityClassName: high\n  priority: 5\n"), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "the integer value of priority (5) must not be provided in pod spec") {
		t.Errorf("pod contradicting its class: %v\n%s", err, out)
	}
}
