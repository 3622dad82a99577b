package controlplane

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/control/apiserver"
	"github.com/minik8s/minik8s/pkg/control/auth"
	"github.com/minik8s/minik8s/pkg/control/metricsapi"
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

// metricsExtension is metrics.k8s.io (pkg/control/metricsapi), reading nodes and pods
// over loopback as its own user and the nodes' figures with the kubelet-client transport.
func metricsExtension(ca *pki.CA, o Options, nodeTransport http.RoundTripper, log *slog.Logger) (apiserver.Extension, error) {
	cfg, err := loopbackConfig(ca, o.ServerURL(), "metrics-server", auth.MetricsServerUser, nil)
	if err != nil {
		return apiserver.Extension{}, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return apiserver.Extension{}, err
	}
	return apiserver.Extension{GroupVersion: metricsapi.GroupVersion, Resources: metricsapi.Resources,
		Handler: metricsapi.New(client, nodeTransport, nodeAddressTypes(o.KubeletPreferredAddressTypes), log.With("component", "metrics"))}, nil
}
