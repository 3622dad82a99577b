package controlplane

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/pki"
)

// The serving certificate is replaced before it expires, and new handshakes get the new
// one while the listener keeps running.
func TestServingCertificateRenewedBeforeExpiry(t *testing.T) {
	ca, err := pki.EnsureCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const validity = 3 * time.Second
	s, err := newServingCert(func() (tls.Certificate, error) {
		pair, err := ca.IssueServingFor("miniapi", []string{"127.0.0.1"}, validity)
		if err != nil {
			return tls.Certificate{}, err
		}
		return pair.TLSCertificate()
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.run(ctx)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: s.get})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	served := func() *tls.ConnectionState {
		c, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: ca.CertPool(), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		defer c.Close()
		st := c.ConnectionState()
		return &st
	}
	first := served().PeerCertificates[0]
	deadline := first.NotAfter
	for time.Now().Before(deadline) {
		if cur := served().PeerCertificates[0]; cur.SerialNumber.Cmp(first.SerialNumber) != 0 {
			t.Logf("renewed %v before the first expired", time.Until(first.NotAfter).Round(10*time.Millisecond))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("serving certificate not renewed before it expired at %s", first.NotAfter)
}
