package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/pki"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// How a lab's minilets get their credentials (Options.Join).
const (
	// JoinCertificate: minilab issues each node's client certificate from the CA.
	JoinCertificate = "certificate"
	// JoinToken: each minilet gets only a bootstrap kubeconfig (a bootstrap token) and
	// requests its certificate through a CSR, as a kubelet joining with kubeadm does.
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
