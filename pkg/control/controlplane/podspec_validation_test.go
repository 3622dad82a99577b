package controlplane

import (
	"strings"
	"testing"
)

// TestPodSpecValidationThroughKubectl: `kubectl apply` of a pod and of a deployment with
// a bad toleration and a volume of two sources prints kube-apiserver's refusal
// (pkg/apis/core/validation/validation.go: ValidateTolerations, validateVolumeSource).
func TestPodSpecValidationThroughKubectl(t *testing.T) {
	c := startCluster(t)
	const spec = `{"containers":[{"name":"c","image":"busybox"}],
		"tolerations":[{"key":"dedicated","operator":"In","value":"db"}],
		"volumes":[{"name":"data","emptyDir":{},"hostPath":{"path":"/tmp"}}]}`
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad","namespace":"default"},"spec":` + spec + `}`
	out, err := c.kubectl(t, pod, "apply", "-f", "-")
	// kubectl lists the causes of a refusal one a line.
	want := "The Pod \"bad\" is invalid: \n" +
		"* spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type\n" +
		`* spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists"`
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("kubectl apply of a bad pod: %v\n%s\nwant %s", err, out, want)
	}

	deploy := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bad","namespace":"default"},
		"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}},"spec":` + spec + `}}}`
	out, err = c.kubectl(t, deploy, "apply", "-f", "-")
	want = "The Deployment \"bad\" is invalid: \n" +
		"* spec.template.spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type\n" +
		`* spec.template.spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists"`
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("kubectl apply of a bad deployment: %v\n%s\nwant %s", err, out, want)
	}
}
