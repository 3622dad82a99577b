package controlplane

import (
	"crypto/tls"
	"net/http"
	"time"

	"github.com/minik8s/minik8s/pkg/control/auth"
	"github.com/minik8s/minik8s/pkg/pki"
)

// kubeletClientTransport reaches the nodes' API (pkg/nodeapi) as kube-apiserver reaches
// kubelets: with its own client certificate (user kube-apiserver-kubelet-client) and
// trusting only serving certificates of the cluster CA.
func kubeletClientTransport(ca *pki.CA) (http.RoundTripper, error) {
	pair, err := ca.IssueClient(auth.KubeletClientUser, nil) // authorized by system:kubelet-api-admin
	if err != nil {
		return nil, err
	}
	cert, err := pair.TLSCertificate()
	if err != nil {
		return nil, err
	}
	return &http.Transport{
		TLSClientConfig:     &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: ca.CertPool(), MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
	}, nil
}
