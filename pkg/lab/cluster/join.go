package cluster

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/pki"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// How a lab's minilets get their credentials (Options.Join).
const (
	// JoinCertificate: minilab issues each node's client certificate from the CA.
	JoinCertificate = "certificate"
	// JoinToken: each minilet gets only a bootstrap kubeconfig (a bootstrap token) and
	// the CA, and requests its client and serving certificates through CSRs, as a
	// kubelet joining with kubeadm (and serverTLSBootstrap) does; minilab approves the
	// serving ones as the cluster's admin.
	JoinToken = "token"
)

// createBootstrapToken makes a bootstrap token valid for ttl with the kubectl recipe of
// docs/security.md (kubeadm's Secret format) and returns it as <id>.<secret>.
func createBootstrapToken(ctx context.Context, l *lab.Lab, ttl time.Duration) (string, error) {
	token, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return "", err
	}
	id, secret, _ := strings.Cut(token, ".")
	_, err = Kubectl(ctx, l, "-n", "kube-system", "create", "secret", "generic", bootstraputil.BootstrapTokenSecretName(id),
		"--type", "bootstrap.kubernetes.io/token",
		"--from-literal", "token-id="+id, "--from-literal", "token-secret="+secret,
		"--from-literal", "expiration="+time.Now().Add(ttl).UTC().Format(time.RFC3339),
		"--from-literal", "usage-bootstrap-authentication=true", "--from-literal", "usage-bootstrap-signing=true",
		"--from-literal", "description=minilab node join")
	if err != nil {
		return "", fmt.Errorf("create bootstrap token: %w", err)
	}
	return token, nil
}

// writeBootstrapKubeconfig writes what a joining node is given: the API's address, the
// CA, and the bootstrap token.
func writeBootstrapKubeconfig(path string, ca *pki.CA, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["minik8s"] = &clientcmdapi.Cluster{Server: serverURL(), CertificateAuthorityData: ca.CertPEM}
	cfg.AuthInfos["tls-bootstrap-token-user"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["tls-bootstrap-token-user@minik8s"] = &clientcmdapi.Context{Cluster: "minik8s", AuthInfo: "tls-bootstrap-token-user"}
	cfg.CurrentContext = "tls-bootstrap-token-user@minik8s"
	return clientcmd.WriteToFile(*cfg, path)
}

// nodeCredentials returns minilet's credential flags for node n: a kubeconfig issued
// from the CA, or (token) a bootstrap kubeconfig with the kubeconfig and cert dir
// minilet fills itself.
func nodeCredentials(l *lab.Lab, n lab.Node, ca *pki.CA, join, token string) ([]string, error) {
	kubeconfig := filepath.Join(l.StateDir, n.Name+".kubeconfig")
	if join == JoinToken {
		boot := filepath.Join(l.StateDir, n.Name+"-bootstrap.kubeconfig")
		if err := writeBootstrapKubeconfig(boot, ca, token); err != nil {
			return nil, err
		}
		return []string{"--bootstrap-kubeconfig", boot, "--kubeconfig", kubeconfig,
			"--cert-dir", filepath.Join(l.StateDir, n.Name+"-pki", "client")}, nil
	}
	if err := ca.WriteKubeconfig(kubeconfig, serverURL(), "system:node:"+n.Name, []string{"system:nodes"}); err != nil {
		return nil, err
	}
	return []string{"--kubeconfig", kubeconfig}, nil
}

// nodeAPIFlags are minilet's node API flags for node n: a serving certificate minilab
// issues from the CA, or (token) --rotate-server-certificates: minilet requests its own,
// which nothing in the cluster approves (as in Kubernetes) and minilab approves as the
// cluster's admin would (ApproveServingCSRs).
func nodeAPIFlags(l *lab.Lab, n lab.Node, ca *pki.CA, join string) ([]string, error) {
	if join == JoinToken {
		return []string{"--rotate-server-certificates",
			"--client-ca-file", filepath.Join(controlplane.PKIDir(apiDataDir(l)), pki.CACertFile)}, nil
	}
	cert, key, caFile, err := ca.WriteServing(filepath.Join(l.StateDir, n.Name+"-pki"), "minilet", []string{n.IP, n.Name})
	if err != nil {
		return nil, err
	}
	return []string{"--tls-cert-file", cert, "--tls-private-key-file", key, "--client-ca-file", caFile}, nil
}

// ApproveServingCSRs does what a cluster admin does for nodes that request their serving
// certificates (kube-controller-manager approves no kubernetes.io/kubelet-serving
// request): it reads the pending ones, and approves with `kubectl certificate approve`
// each that a node of the lab made for itself (requester and CN system:node:<name>, O
// system:nodes, naming only the node's host name and IP). It returns how many of the
// lab's nodes have an issued serving certificate.
func ApproveServingCSRs(ctx context.Context, l *lab.Lab) (int, error) {
	out, err := Kubectl(ctx, l, "get", "csr", "-o", "json")
	if err != nil {
		return 0, err
	}
	var list certificatesv1.CertificateSigningRequestList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return 0, fmt.Errorf("kubectl get csr: %w", err)
	}
	issued := map[string]bool{}
	for _, csr := range list.Items {
		n, ok := servingRequestOfNode(l, &csr)
		if !ok {
			continue
		}
		if len(csr.Status.Certificate) > 0 {
			issued[n.Name] = true
			continue
		}
		if decided(&csr) {
			continue
		}
		if _, err := Kubectl(ctx, l, "certificate", "approve", csr.Name); err != nil {
			return 0, err
		}
	}
	return len(issued), nil
}

// servingRequestOfNode is the lab node whose own serving certificate csr asks for.
func servingRequestOfNode(l *lab.Lab, csr *certificatesv1.CertificateSigningRequest) (lab.Node, bool) {
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		return lab.Node{}, false
	}
	i := slices.IndexFunc(l.Nodes, func(n lab.Node) bool { return csr.Spec.Username == "system:node:"+n.Name })
	if i < 0 {
		return lab.Node{}, false
	}
	n := l.Nodes[i]
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		return n, false
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil || req.Subject.CommonName != csr.Spec.Username || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) ||
		len(req.EmailAddresses) > 0 || len(req.URIs) > 0 || len(req.DNSNames)+len(req.IPAddresses) == 0 {
		return n, false
	}
	for _, name := range req.DNSNames {
		if name != n.Name {
			return n, false
		}
	}
	for _, ip := range req.IPAddresses {
		if !ip.Equal(net.ParseIP(n.IP)) {
			return n, false
		}
	}
	return n, true
}

// decided: approved or denied already.
func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	return slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied
	})
}
