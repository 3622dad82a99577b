package pki

// WriteFiles writes the certificate (0644) and its private key (0600), as daemons that take
// --tls-cert-file and --tls-private-key-file read them.
func (k KeyPair) WriteFiles(certPath, keyPath string) error {
	if err := writeFile(certPath, k.CertPEM, 0o644); err != nil {
		return err
	}
	return writeFile(keyPath, k.KeyPEM, 0o600)
}
