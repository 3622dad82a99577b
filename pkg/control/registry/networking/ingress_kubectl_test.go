package networking_test

import (
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
)

// TestIngressDefaultClassKubectl: `kubectl create ingress` without --class gets the class
// annotated ingressclass.kubernetes.io/is-default-class=true, as
// kube-apiserver's DefaultIngressClass admission sets it; --class and the old
// kubernetes.io/ingress.class annotation keep theirs.
func TestIngressDefaultClassKubectl(t *testing.T) {
	testenv.RequireTools(t, "kubectl")
	c := controlplanetest.Start(t, nil)
	c.MustKubectl(t, `
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: old, annotations: {ingressclass.kubernetes.io/is-default-class: "true"}}
spec: {controller: example.com/old}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: plain}
spec: {controller: example.com/plain}
`, "create", "-f", "-")
	c.MustKubectl(t, "", "create", "ingress", "first", "--rule=foo.example.com/=web:80")
	out := c.MustKubectl(t, "", "get", "ingress", "first", "-o", "jsonpath={.spec.ingressClassName}")
	if out != "old" {
		t.Errorf("first ingress: class %q, want old", out)
	}
	c.MustKubectl(t, "", "create", "ingress", "named", "--class=plain", "--rule=foo.example.com/=web:80")
	c.MustKubectl(t, "", "create", "ingress", "annotated", "--annotation=kubernetes.io/ingress.class=other", "--rule=foo.example.com/=web:80")
	got := c.MustKubectl(t, "", "get", "ingress")
	for _, want := range []string{"first old foo.example.com 80", "named plain foo.example.com 80", "annotated <none> foo.example.com 80"} {
		if !strings.Contains(strings.Join(strings.Fields(got), " "), want) {
			t.Errorf("kubectl get ingress: no %q in\n%s", want, got)
		}
	}
}
