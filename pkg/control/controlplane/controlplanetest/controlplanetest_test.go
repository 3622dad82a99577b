package controlplanetest

import (
	"strings"
	"testing"
)

func TestStartServesKubectl(t *testing.T) {
	c := Start(t, nil)
	c.CreateReadyNode(t, "node-a", 10, map[string]string{"zone": "a"})
	out := c.MustKubectl(t, "", "get", "nodes", "-L", "zone")
	if !strings.Contains(out, "node-a") || !strings.Contains(out, "Ready") {
		t.Fatalf("kubectl get nodes:\n%s", out)
	}
}
