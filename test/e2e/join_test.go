package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// TestJoinWithBootstrapToken: nodes given only a bootstrap kubeconfig (minilab up
// --join=token) join the cluster: each minilet's CSR is auto-approved (nodeclient) and
// signed, the Nodes become Ready and run pods, and the kubeconfig each minilet wrote is
// system:node:<name> in system:nodes (`kubectl auth whoami`), not the bootstrap token.
func TestJoinWithBootstrapToken(t *testing.T) {
	l := upLabWith(t, "e2e-join", cluster.Options{Nodes: 2, Join: cluster.JoinToken})

	csrs := mustKubectl(t, l, "get", "csr", "-o",
		`jsonpath={range .items[*]}{.spec.signerName} {.spec.username} {.status.conditions[0].reason} {.status.certificate}{"\n"}{end}`)
	issued := 0
	for _, line := range strings.Split(strings.TrimSpace(csrs), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "kubernetes.io/kube-apiserver-client-kubelet" && strings.HasPrefix(f[1], "system:bootstrap:") &&
			f[2] == "AutoApproved" && f[3] != "" {
			issued++
		}
	}
	if issued < len(l.Nodes) {
		t.Errorf("want an auto-approved, issued kubelet client CSR from a bootstrap token per node, got:\n%s\n%s", csrs, mustKubectl(t, l, "get", "csr"))
	}

	for _, n := range l.Nodes {
		kubeconfig := filepath.Join(l.StateDir, n.Name+".kubeconfig")
		data, err := os.ReadFile(kubeconfig)
		if err != nil {
			t.Fatalf("minilet on %s wrote no --kubeconfig: %v", n.Name, err)
		}
		if !strings.Contains(string(data), "kubelet-client-current.pem") || strings.Contains(string(data), "token:") {
			t.Errorf("%s's kubeconfig should point at its cert dir and hold no token:\n%s", n.Name, data)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := lab.Command(ctx, l.ControlPlane.NetNS, "kubectl", "--kubeconfig", kubeconfig, "auth", "whoami",
			"-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}").CombinedOutput()
		cancel()
		if err != nil || !strings.HasPrefix(string(out), "system:node:"+n.Name+" ") || !strings.Contains(string(out), "system:nodes") {
			t.Errorf("kubectl auth whoami with %s's written kubeconfig = %q (%v), want system:node:%s in system:nodes", n.Name, out, err, n.Name)
		}
	}

	applyYAML(t, l, `apiVersion: v1
kind: Pod
metadata: {name: joined}
spec:
  nodeName: `+l.Nodes[1].Name+`
  containers: [{name: app, image: localhost/minik8s/netexec:v1}]
`)
	deadline := time.Now().Add(90 * time.Second)
	for {
		phase := mustKubectl(t, l, "get", "pod", "joined", "-o", "jsonpath={.status.phase}")
		if phase == "Running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod on the joined node is %q, want Running", phase)
		}
		time.Sleep(time.Second)
	}
}
