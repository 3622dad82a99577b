package certificate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
)

// servingPair is the cert store's name: kubelet-server-current.pem, as the kubelet's.
const servingPair = "kubelet-server"

// Serving is the kubelet's server certificate manager (--rotate-server-certificates):
// a kubernetes.io/kubelet-serving certificate for system:node:<name> in system:nodes
// naming the node's host name and IP, requested through a CSR with the node's own
// credentials, kept in --cert-dir and renewed at 70-90 % of its lifetime. Nothing
// approves these requests automatically (as in Kubernetes): a cluster admin does, with
// `kubectl certificate approve`. The manager is started; GetCertificate serves from it.
func Serving(ctx context.Context, client kubernetes.Interface, certDir, nodeName, nodeIP string) (certificate.Manager, error) {
	if certDir == "" {
		return nil, errors.New("--cert-dir is required to keep the node's serving certificate")
	}
	ip := net.ParseIP(nodeIP)
	if ip == nil {
		return nil, fmt.Errorf("serving certificate: node IP %q is not an IP address", nodeIP)
	}
	store, err := certificate.NewFileStore(servingPair, certDir, certDir, "", "")
	if err != nil {
		return nil, fmt.Errorf("--cert-dir %s: %w", certDir, err)
	}
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) { return client, nil },
		Template: &x509.CertificateRequest{
			Subject:     pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}},
			DNSNames:    []string{nodeName},
			IPAddresses: []net.IP{ip},
		},
		SignerName:       certificatesv1.KubeletServingSignerName,
		GetUsages:        certificate.DefaultKubeletServingGetUsages,
		CertificateStore: store,
		Name:             servingPair,
		Ctx:              &ctx,
	})
	if err != nil {
		return nil, err
	}
	m.Start()
	go func() { <-ctx.Done(); m.Stop() }()
	return m, nil
}

// GetCertificate serves TLS with m's current certificate, refusing the handshake while
// there is none (not yet approved, or expired), as the kubelet does.
func GetCertificate(m certificate.Manager) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if cert := m.Current(); cert != nil {
			return cert, nil
		}
		return nil, errors.New("no serving certificate available for the kubelet")
	}
}
