// Package pki makes the cluster's certificate authority and the certificates signed by it:
// the API server's serving certificate and client certificates whose subject carries the
// Kubernetes user (CN) and groups (O), and writes kubeconfig files that use them.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	certValidity = 365 * 24 * time.Hour
)

// CA is a certificate authority loaded from (or created in) a directory.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
}

// CACertFile and CAKeyFile are the CA's file names inside a pki directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// EnsureCA loads the CA from dir, creating it on first use so restarts keep trusting
// every certificate issued before.
func EnsureCA(dir string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	switch {
	case certErr == nil && keyErr == nil:
		return parseCA(certPEM, keyPEM, certPath)
	case errors.Is(certErr, os.ErrNotExist) && errors.Is(keyErr, os.ErrNotExist):
		return createCA(dir, certPath, keyPath)
	case certErr != nil && !errors.Is(certErr, os.ErrNotExist):
		return nil, fmt.Errorf("read CA certificate: %w", certErr)
	case keyErr != nil && !errors.Is(keyErr, os.ErrNotExist):
		return nil, fmt.Errorf("read CA key: %w", keyErr)
	default:
		return nil, fmt.Errorf("CA in %s is incomplete: need both %s and %s", dir, CACertFile, CAKeyFile)
	}
}

func createCA(dir, certPath, keyPath string) (*CA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pki dir: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "minik8s-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	// Key first: a crash between the two writes leaves "incomplete", never a cert without key.
	if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeFile(certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	return parseCA(certPEM, keyPEM, certPath)
}

func parseCA(certPEM, keyPEM []byte, certPath string) (*CA, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", certPath, err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key for %s: %w", certPath, err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: certPEM}, nil
}

// KeyPair is a PEM certificate and its PEM private key.
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

// TLSCertificate turns the pair into a tls.Certificate.
func (k KeyPair) TLSCertificate() (tls.Certificate, error) {
	return tls.X509KeyPair(k.CertPEM, k.KeyPEM)
}

// IssueServing signs a server certificate valid for the given host names and IPs.
func (ca *CA) IssueServing(commonName string, hosts []string) (KeyPair, error) {
	return ca.IssueServingFor(commonName, hosts, certValidity)
}

// IssueServingFor is IssueServing for a certificate valid for validity (a year for
// IssueServing), backdated an hour for clocks a little behind.
func (ca *CA) IssueServingFor(commonName string, hosts []string, validity time.Duration) (KeyPair, error) {
	return ca.issueForHosts(commonName, hosts, validity, x509.ExtKeyUsageServerAuth)
}

// IssuePeer signs a certificate that serves hosts and also authenticates as a client, as an
// etcd member's does toward the other members (--peer-cert-file).
func (ca *CA) IssuePeer(commonName string, hosts []string) (KeyPair, error) {
	return ca.issueForHosts(commonName, hosts, certValidity, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issueForHosts(commonName string, hosts []string, validity time.Duration, usages ...x509.ExtKeyUsage) (KeyPair, error) {
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: commonName}, ExtKeyUsage: usages}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.issue(tmpl, validity)
}

// IssueClient signs a client certificate for a Kubernetes user: CN is the user name and
// each group is an O, which is how the API server authenticates x509 clients.
func (ca *CA) IssueClient(user string, groups []string) (KeyPair, error) {
	if user == "" {
		return KeyPair{}, errors.New("client certificate needs a user name")
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return ca.issue(tmpl, certValidity)
}

func (ca *CA) issue(tmpl *x509.Certificate, validity time.Duration) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(validity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("sign certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM}, nil
}

// CertPool returns a pool trusting only this CA.
func (ca *CA) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err))
	}
	return n
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func parseCert(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return x509.ParseCertificate(block.Bytes)
}

func parseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM key block")
	}
	switch block.Type {
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		signer, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported key type %T", k)
		}
		return signer, nil
	default:
		return nil, fmt.Errorf("unsupported PEM block %q", block.Type)
	}
}

// writeFile writes atomically (temp file + rename) so a crash never leaves half a key.
func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteServing issues a serving certificate for hosts and writes it as dir/name.crt and
// dir/name.key, with the CA's certificate as dir/ca.crt for verifying clients (a node's
// API: --tls-cert-file, --tls-private-key-file, --client-ca-file).
func (ca *CA) WriteServing(dir, name string, hosts []string) (certPath, keyPath, caPath string, err error) {
	pair, err := ca.IssueServing(name, hosts)
	if err != nil {
		return "", "", "", err
	}
	certPath, keyPath, caPath = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"), filepath.Join(dir, CACertFile)
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{certPath, pair.CertPEM, 0o644}, {keyPath, pair.KeyPEM, 0o600}, {caPath, ca.CertPEM, 0o644}} {
		if err := writeFile(f.path, f.data, f.mode); err != nil {
			return "", "", "", err
		}
	}
	return certPath, keyPath, caPath, nil
}
