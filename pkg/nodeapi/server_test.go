package nodeapi

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/pki"
)

// TestClientCertificateRequired serves the node API over real TLS and checks that only a
// client holding a certificate of the cluster CA gets an answer.
func TestClientCertificateRequired(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.EnsureCA(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.EnsureCA(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.IssueServing("node-1", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{NodeName: "node-1", Addr: freeAddr(t),
		CertFile: filepath.Join(dir, "node.crt"), KeyFile: filepath.Join(dir, "node.key"),
		ClientCAFile: filepath.Join(dir, "ca", pki.CACertFile)}
	if err := serving.WriteFiles(cfg.CertFile, cfg.KeyFile); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := New(cfg, nil, nil, func() error { return nil }, nil, nil).ListenAndServe(ctx); err != nil {
		t.Fatal(err)
	}

	get := func(client *x509Client) (string, error) {
		tlsCfg := &tls.Config{RootCAs: ca.CertPool()}
		if client != nil {
			cert, err := client.pair.TLSCertificate()
			if err != nil {
				t.Fatal(err)
			}
			tlsCfg.Certificates = []tls.Certificate{cert}
		}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
		resp, err := c.Get("https://" + cfg.Addr + "/healthz")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	good, err := ca.IssueClient("kube-apiserver-kubelet-client", []string{"system:masters"})
	if err != nil {
		t.Fatal(err)
	}
	if body, err := get(&x509Client{good}); err != nil || body != "ok" {
		t.Fatalf("client of the cluster CA: got %q, %v; want ok", body, err)
	}
	if body, err := get(nil); err == nil {
		t.Fatalf("anonymous client was answered %q", body)
	}
	stranger, err := other.IssueClient("mallory", []string{"system:masters"})
	if err != nil {
		t.Fatal(err)
	}
	if body, err := get(&x509Client{stranger}); err == nil {
		t.Fatalf("client of another CA was answered %q", body)
	}
}

type x509Client struct{ pair pki.KeyPair }

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
