package pki_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"github.com/minik8s/minik8s/pkg/pki"
)

// TestWriteEtcdCertificates checks what an etcd member and its clients verify: the member's
// certificate serves its address, its name and the loopback address and authenticates it to
// the other members; the API servers' certificate is a client's; both chain to ca.crt.
func TestWriteEtcdCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.EnsureCA(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "etcd-pki")
	if err := ca.WriteEtcdMember(out, "cp-1", []string{"10.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteEtcdClient(out); err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteEtcdMember(out, "", nil); err == nil {
		t.Error("a member certificate without a name: no error")
	}
	caFile, clientCert, clientKey := pki.EtcdClientFiles(out)
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	load := func(cert, key string) *x509.Certificate {
		t.Helper()
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	member := load(pki.EtcdMemberFiles(out, "cp-1"))
	for _, host := range []string{"10.0.0.1", "cp-1", "127.0.0.1", "localhost"} {
		if _, err := member.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("member certificate serving %s: %v", host, err)
		}
	}
	if _, err := member.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("member certificate as a peer's client: %v", err)
	}
	client := load(clientCert, clientKey)
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("the client certificate also serves")
	}
	if st, err := os.Stat(clientKey); err != nil {
		t.Error(err)
	} else if st.Mode().Perm() != 0o600 {
		t.Errorf("client key mode %v, want 0600", st.Mode().Perm())
	}
}
