package controlplane

import (
	"strings"
	"testing"
)

// TestUnimplementedFieldsWarn: a pod (or a workload's template) asking for what minilet does
// not do yet is accepted with kubectl showing a Warning that names the field; kube's own
// warnings (here a duplicate host alias) come after.
func TestUnimplementedFieldsWarn(t *testing.T) {
	c := startCluster(t)
	pod := `apiVersion: v1
kind: Pod
metadata: {name: ambitious}
spec:
  initContainers: [{name: setup, image: localhost/minik8s/busybox:v1}]
  volumes: [{name: data, nfs: {server: nfs.example, path: /}}, {name: img, image: {reference: localhost/minik8s/busybox:v1}}]
  hostAliases: [{ip: 10.0.0.1, hostnames: [a]}, {ip: 10.0.0.1, hostnames: [b]}]
  containers:
  - name: app
    image: localhost/minik8s/netexec:v1
    readinessProbe: {exec: {command: [cat, /ready]}}
    livenessProbe: {httpGet: {path: /healthz, port: 8080}}
    resources: {limits: {memory: 64Mi, ephemeral-storage: 1Gi}}
`
	out := c.mustKubectl(t, pod, "apply", "-f", "-")
	for _, done := range []string{"livenessProbe", "readinessProbe", "initContainers", "limits.ephemeral-storage", "limits.memory", "volumes[1]"} {
		if strings.Contains(out, done) {
			t.Errorf("%s (minilet runs those) got a warning:\n%s", done, out)
		}
	}
	for _, want := range []string{
		`Warning: spec.volumes[0]: volume "data" is of a type minilet does not mount`,
		`Warning: spec.hostAliases[1].ip: duplicate ip "10.0.0.1"`,
		"pod/ambitious created",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply output lacks %q:\n%s", want, out)
		}
	}
	deploy := strings.NewReplacer("apiVersion: v1\nkind: Pod\nmetadata: {name: ambitious}\nspec:",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ambitious}\nspec:\n  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    spec:",
		"\n  ", "\n      ").Replace(pod)
	out = c.mustKubectl(t, deploy, "apply", "-f", "-")
	if !strings.Contains(out, "Warning: spec.template.spec.volumes[0]: volume \"data\" is of a type minilet does not mount") ||
		!strings.Contains(out, `Warning: spec.template.spec.hostAliases[1].ip: duplicate ip "10.0.0.1"`) {
		t.Errorf("a Deployment's template gets no warning:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "run", "plain", "--image=localhost/minik8s/netexec:v1"); strings.Contains(out, "Warning") {
		t.Errorf("a plain pod got warnings:\n%s", out)
	}
}
