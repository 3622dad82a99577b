package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
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
// Certificates live 90 s (--cluster-signing-duration): each minilet renews its own
// (selfnodeclient) and its node stays Ready and runs a new pod after the first expired.
func TestJoinWithBootstrapToken(t *testing.T) {
	l := upLabWith(t, "e2e-join", cluster.Options{Nodes: 2, Join: cluster.JoinToken, SigningDuration: 90 * time.Second})

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

	runPodOn(t, l, "joined", l.Nodes[1].Name)

	// Rotation: past the first certificates' expiry the nodes are still Ready, on renewed
	// certificates from their own (selfnodeclient) requests.
	first := map[string]*x509.Certificate{}
	var expiry time.Time
	for _, n := range l.Nodes {
		first[n.Name] = clientCert(t, l, n)
		if first[n.Name].NotAfter.After(expiry) {
			expiry = first[n.Name].NotAfter
		}
	}
	t.Logf("first node certificates expire by %s; waiting past it", expiry.Format(time.TimeOnly))
	time.Sleep(time.Until(expiry.Add(5 * time.Second)))
	for _, n := range l.Nodes {
		if cur := clientCert(t, l, n); cur.SerialNumber.Cmp(first[n.Name].SerialNumber) == 0 {
			t.Errorf("%s's certificate (until %s) was not renewed", n.Name, first[n.Name].NotAfter.Format(time.TimeOnly))
		}
	}
	self := mustKubectl(t, l, "get", "csr", "-o", `jsonpath={range .items[*]}{.spec.username}={.status.conditions[0].message}{"\n"}{end}`)
	for _, n := range l.Nodes {
		if !strings.Contains(self, "system:node:"+n.Name+"=Auto approving self kubelet client certificate after SubjectAccessReview.") {
			t.Errorf("no self-renewal CSR of %s approved:\n%s", n.Name, self)
		}
	}
	if out := mustKubectl(t, l, "get", "nodes", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}`); strings.Count(out, "True") != len(l.Nodes) {
		t.Errorf("after rotation nodes Ready: %q", out)
	}
	runPodOn(t, l, "after-rotation", l.Nodes[0].Name)
}

// clientCert is the node's current client certificate, from minilet's --cert-dir.
func clientCert(t *testing.T, l *lab.Lab, n lab.Node) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(l.StateDir, n.Name+"-pki", "client", "kubelet-client-current.pem"))
	if err != nil {
		t.Fatal(err)
	}
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type == "CERTIFICATE" {
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			return cert
		}
	}
	t.Fatalf("no certificate in %s's cert dir", n.Name)
	return nil
}

// runPodOn runs a pod bound to node and waits for it to run.
func runPodOn(t *testing.T, l *lab.Lab, name, node string) {
	t.Helper()
	applyYAML(t, l, `apiVersion: v1
kind: Pod
metadata: {name: `+name+`}
spec:
  nodeName: `+node+`
  containers: [{name: app, image: localhost/minik8s/netexec:v1}]
`)
	deadline := time.Now().Add(90 * time.Second)
	for {
		phase := mustKubectl(t, l, "get", "pod", name, "-o", "jsonpath={.status.phase}")
		if phase == "Running" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s on %s is %q, want Running", name, node, phase)
		}
		time.Sleep(time.Second)
	}
}
