package e2e

import (
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	certutil "k8s.io/client-go/util/cert"
)

// TestJoinWithBootstrapToken: nodes given only a bootstrap kubeconfig (minilab up
// --join=token) join the cluster: each minilet's CSR is auto-approved (nodeclient) and
// signed, the Nodes become Ready and run pods, and the kubeconfig each minilet wrote is
// system:node:<name> in system:nodes (`kubectl auth whoami`), not the bootstrap token.
// Each minilet also requests its serving certificate (kubelet-serving), which minilab
// approves as the admin, and `kubectl logs` reaches the node API with it. Certificates
// live 90 s (--cluster-signing-duration): each minilet renews its client certificate
// (selfnodeclient, auto-approved) and its serving certificate (approved here as an admin
// would); its node stays Ready, runs a new pod and serves logs after the first expired.
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

	// The serving certificates: requested by each node, approved by minilab as the admin
	// (kubectl certificate approve), nothing in the cluster approved them itself.
	serving := mustKubectl(t, l, "get", "csr", "-o",
		`jsonpath={range .items[?(@.spec.signerName=="kubernetes.io/kubelet-serving")]}{.spec.username} {.status.conditions[0].reason}{"\n"}{end}`)
	for _, n := range l.Nodes {
		if !strings.Contains(serving, "system:node:"+n.Name+" KubectlApprove") {
			t.Errorf("no kubelet-serving CSR of %s approved with kubectl:\n%s", n.Name, serving)
		}
	}
	runPodOn(t, l, "joined", l.Nodes[1].Name)
	// kubectl logs goes through miniapi to the node API, whose certificate the CSR gave.
	mustKubectl(t, l, "logs", "joined")

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
	firstServing := map[string]*x509.Certificate{}
	for _, n := range l.Nodes {
		firstServing[n.Name] = certIn(t, l, n, "kubelet-server-current.pem")
		if firstServing[n.Name].NotAfter.After(expiry) {
			expiry = firstServing[n.Name].NotAfter
		}
	}
	t.Logf("first node certificates expire by %s; waiting past it, approving the serving certificates' renewals as an admin does", expiry.Format(time.TimeOnly))
	for time.Now().Before(expiry.Add(5 * time.Second)) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := cluster.ApproveServingCSRs(ctx, l); err != nil {
			t.Logf("approving serving CSRs: %v", err)
		}
		cancel()
		time.Sleep(2 * time.Second)
	}
	for _, n := range l.Nodes {
		if cur := certIn(t, l, n, "kubelet-server-current.pem"); cur.SerialNumber.Cmp(firstServing[n.Name].SerialNumber) == 0 {
			t.Errorf("%s's serving certificate (until %s) was not renewed", n.Name, firstServing[n.Name].NotAfter.Format(time.TimeOnly))
		}
	}
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
	for _, pod := range []string{"joined", "after-rotation"} { // both nodes' renewed serving certificates
		mustKubectl(t, l, "logs", pod)
	}
}

// clientCert is the node's current client certificate, from minilet's --cert-dir.
func clientCert(t *testing.T, l *lab.Lab, n lab.Node) *x509.Certificate {
	t.Helper()
	return certIn(t, l, n, "kubelet-client-current.pem")
}

// certIn is the certificate of a file of the node's --cert-dir.
func certIn(t *testing.T, l *lab.Lab, n lab.Node, file string) *x509.Certificate {
	t.Helper()
	certs, err := certutil.CertsFromFile(filepath.Join(l.StateDir, n.Name+"-pki", "client", file))
	if err != nil {
		t.Fatalf("%s's %s: %v", n.Name, file, err)
	}
	return certs[0]
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
	waitRunning(t, l, name)
}
