// Package certificate gives minilet its API client credentials the way the kubelet's TLS
// bootstrapping does: a --kubeconfig whose certificate is still valid is used as it is;
// otherwise the --bootstrap-kubeconfig (a bootstrap token) requests a node client
// certificate through a CertificateSigningRequest, the certificate and key go into
// --cert-dir (kubelet-client-current.pem) and a kubeconfig pointing at them is written
// at --kubeconfig. client-go's certificate Manager then renews the certificate at 70-90 %
// of its lifetime, and the client's connections are closed on each renewal so the next
// ones present the new certificate.
package certificate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/connrotation"
)

// Options are the kubelet's flags of the same names.
type Options struct {
	Kubeconfig          string // --kubeconfig: read, or written after bootstrapping
	BootstrapKubeconfig string // --bootstrap-kubeconfig: "" when the node has its credentials
	CertDir             string // --cert-dir: where kubelet-client-*.pem go
	NodeName            string
	Log                 *slog.Logger
	// checkPeriod is how often the client looks for a renewed certificate (0: 10 s).
	checkPeriod time.Duration
}

// clientPair is the cert store's name: kubelet-client-current.pem, as the kubelet's.
const clientPair = "kubelet-client"

// Rotating returns a client config whose certificate comes from a Manager that
// bootstraps it (if need be) and renews it; it returns once the first certificate is
// there. fail is called if the certificate expires while the API server answers: a
// restart can then bootstrap again, as the kubelet exits in that case.
func Rotating(ctx context.Context, o Options, fail func(error)) (*rest.Config, error) {
	if o.CertDir == "" {
		return nil, errors.New("--cert-dir is required to keep the node's client certificate")
	}
	if o.checkPeriod == 0 {
		o.checkPeriod = 10 * time.Second
	}
	certConfig, userConfig, err := LoadClientConfig(o.Kubeconfig, o.BootstrapKubeconfig, o.CertDir, o.Log)
	if err != nil {
		return nil, err
	}
	m, err := newManager(ctx, certConfig, userConfig, o)
	if err != nil {
		return nil, err
	}
	transportConfig := rest.AnonymousClientConfig(userConfig)
	if err := rotateTransport(ctx, o.checkPeriod, transportConfig, m, o.Log, fail); err != nil {
		return nil, err
	}
	m.Start()
	go func() { <-ctx.Done(); m.Stop() }()
	if m.Current() == nil {
		o.Log.Info("waiting for the node's client certificate (a CertificateSigningRequest through the bootstrap kubeconfig)")
		if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
			return m.Current() != nil, nil
		}); err != nil {
			return nil, fmt.Errorf("no client certificate: %w", err)
		}
		o.Log.Info("node client certificate issued", "cert", filepath.Join(o.CertDir, clientPair+"-current.pem"), "kubeconfig", o.Kubeconfig)
	}
	return transportConfig, nil
}

// LoadClientConfig decides which credentials to start from, as the kubelet's bootstrap
// package does: certConfig requests certificates, userConfig is the node's own. Without a
// bootstrap kubeconfig both are --kubeconfig. With one, a --kubeconfig whose certificate
// is still valid wins; otherwise a kubeconfig pointing at the cert store is written and
// the bootstrap credentials request the first certificate.
func LoadClientConfig(kubeconfig, bootstrap, certDir string, log *slog.Logger) (certConfig, userConfig *rest.Config, err error) {
	if bootstrap == "" {
		c, err := load(kubeconfig)
		if err != nil {
			return nil, nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		return c, rest.CopyConfig(c), nil
	}
	if valid, why := stillValid(kubeconfig); valid {
		c, err := load(kubeconfig)
		if err != nil {
			return nil, nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		return c, rest.CopyConfig(c), nil
	} else {
		log.Info("bootstrapping the node's client credentials", "kubeconfig", kubeconfig, "because", why, "bootstrap-kubeconfig", bootstrap)
	}
	bootConfig, err := load(bootstrap)
	if err != nil {
		return nil, nil, fmt.Errorf("--bootstrap-kubeconfig %s: %w", bootstrap, err)
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("--cert-dir: %w", err)
	}
	userConfig = rest.AnonymousClientConfig(bootConfig)
	pem := filepath.Join(certDir, clientPair+"-current.pem")
	userConfig.CertFile, userConfig.KeyFile = pem, pem
	if err := writeKubeconfig(userConfig, kubeconfig, pem); err != nil {
		return nil, nil, err
	}
	return bootConfig, userConfig, nil
}

func load(path string) (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", path)
}

// stillValid: the kubeconfig exists and each of its client certificates is unexpired.
func stillValid(kubeconfig string) (bool, string) {
	if _, err := os.Stat(kubeconfig); err != nil {
		return false, "it does not exist"
	}
	c, err := load(kubeconfig)
	if err != nil {
		return false, err.Error()
	}
	tc, err := c.TransportConfig()
	if err != nil {
		return false, err.Error()
	}
	data := tc.TLS.CertData
	if len(data) == 0 && tc.TLS.CertFile != "" {
		if data, err = os.ReadFile(tc.TLS.CertFile); err != nil {
			return false, err.Error()
		}
	}
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil || len(certs) == 0 {
		return false, "it holds no client certificate"
	}
	for _, cert := range certs {
		if time.Now().After(cert.NotAfter) {
			return false, fmt.Sprintf("its client certificate expired at %s", cert.NotAfter.Format(time.RFC3339))
		}
	}
	return true, ""
}

// writeKubeconfig writes the node's kubeconfig: the bootstrap kubeconfig's server and CA,
// the client certificate and key from the cert store's pem (which rotation replaces).
func writeKubeconfig(c *rest.Config, path, pem string) error {
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"default-cluster": {
			Server: c.Host, InsecureSkipTLSVerify: c.Insecure, CertificateAuthority: c.CAFile,
			CertificateAuthorityData: c.CAData, TLSServerName: c.ServerName,
		}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pem, ClientKey: pem}},
		Contexts: map[string]*clientcmdapi.Context{"default-context": {
			Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default",
		}},
		CurrentContext: "default-context",
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		return fmt.Errorf("write --kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// newManager is the kubelet's client certificate manager: CN system:node:<name>,
// O system:nodes, signer kube-apiserver-client-kubelet; requests go out with the node's
// current certificate once it has one, with the bootstrap credentials before.
func newManager(ctx context.Context, certConfig, userConfig *rest.Config, o Options) (certificate.Manager, error) {
	store, err := certificate.NewFileStore(clientPair, o.CertDir, o.CertDir, userConfig.CertFile, userConfig.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("--cert-dir %s: %w", o.CertDir, err)
	}
	return certificate.NewManager(&certificate.Config{
		ClientsetFn: func(current *tls.Certificate) (kubernetes.Interface, error) {
			if current != nil {
				return kubernetes.NewForConfig(userConfig)
			}
			return kubernetes.NewForConfig(certConfig)
		},
		Template: &x509.CertificateRequest{Subject: pkix.Name{
			CommonName: "system:node:" + o.NodeName, Organization: []string{"system:nodes"}}},
		SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
		GetUsages:  certificate.DefaultKubeletClientGetUsages,
		// A kubeconfig with its certificate embedded (one written by minilab, or kubeadm's
		// on masters) seeds the store, to be rotated from then on.
		BootstrapCertificatePEM: userConfig.CertData,
		BootstrapKeyPEM:         userConfig.KeyData,
		CertificateStore:        store,
		Name:                    clientPair,
		Ctx:                     &ctx,
	})
}

// rotateTransport makes c present the Manager's current certificate, and closes every
// connection when it changes so the next requests handshake with the new one (the
// kubelet's UpdateTransport).
func rotateTransport(ctx context.Context, period time.Duration, c *rest.Config, m certificate.Manager, log *slog.Logger, fail func(error)) error {
	tlsConfig, err := rest.TLSConfigFor(c)
	if err != nil {
		return fmt.Errorf("TLS for the API client: %w", err)
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsConfig.Certificates = nil
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if cert := m.Current(); cert != nil {
			return cert, nil
		}
		return &tls.Certificate{}, nil
	}
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	last := m.Current()
	go wait.UntilWithContext(ctx, func(context.Context) {
		cur := m.Current()
		if cur != nil && cur.Leaf != nil && time.Now().After(cur.Leaf.NotAfter) && m.ServerHealthy() {
			fail(fmt.Errorf("the node's client certificate expired at %s and the API server answers: restart to bootstrap again", cur.Leaf.NotAfter.Format(time.RFC3339)))
			return
		}
		if cur == nil || cur == last {
			return
		}
		last = cur
		log.Info("client certificate rotated, closing connections to use it", "notAfter", cur.Leaf.NotAfter.Format(time.RFC3339))
		dialer.CloseAll()
	}, period)
	c.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy: http.ProxyFromEnvironment, TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig: tlsConfig, MaxIdleConnsPerHost: 25, DialContext: dialer.DialContext,
	})
	// The transport carries TLS from now on.
	c.CertData, c.KeyData, c.CertFile, c.KeyFile = nil, nil, "", ""
	c.CAData, c.CAFile, c.Insecure = nil, "", false
	return nil
}
