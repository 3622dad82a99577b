package controlplane

import (
	"strings"
	"testing"
)

// `kubectl get componentstatuses` answers as kube-apiserver v1.32 does: the deprecation
// warning, the three components healthy, get by name, and no writes.
func TestComponentStatuses(t *testing.T) {
	c := startCluster(t)
	out := c.mustKubectl(t, "", "get", "componentstatuses")
	for _, want := range []string{
		"Warning: v1 ComponentStatus is deprecated in v1.19+",
		"NAME                 STATUS    MESSAGE   ERROR",
		"scheduler            Healthy   ok",
		"controller-manager   Healthy   ok",
		"etcd-0               Healthy   ok",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get componentstatuses: want %q in:\n%s", want, out)
		}
	}
	if out := c.mustKubectl(t, "", "get", "cs", "etcd-0", "-o", "jsonpath={.conditions[0].type}={.conditions[0].status}"); !strings.HasSuffix(out, "Healthy=True") {
		t.Errorf("get cs etcd-0: %q", out)
	}
	if out, err := c.kubectl(t, "", "get", "cs", "nope"); err == nil || !strings.Contains(out, `Error from server (NotFound): componentstatuses "nope" not found`) {
		t.Errorf("get cs nope: %v %s", err, out)
	}
	if out, err := c.kubectl(t, "", "delete", "cs", "etcd-0"); err == nil || !strings.Contains(out, "MethodNotAllowed") {
		t.Errorf("delete cs: %v %s", err, out)
	}
	if out := c.mustKubectl(t, "", "api-resources", "--api-group="); !regexpLine(out, `^componentstatuses\s+cs\s+v1\s+false\s+ComponentStatus$`) {
		t.Errorf("api-resources:\n%s", out)
	}
}
