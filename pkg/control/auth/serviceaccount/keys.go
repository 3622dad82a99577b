// Package serviceaccount issues and checks service account tokens as kube-apiserver does:
// bound JWTs (audience, expiry, the pod they belong to) signed with a key of the API
// server, the TokenRequest subresource, and the OIDC discovery documents that let others
// verify them.
package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-jose/go-jose/v4"
)

// EnsureSigningKey loads the PEM private key at path, creating an ECDSA P-256 key there
// on first use so tokens stay valid across restarts.
func EnsureSigningKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("service account key: %w", err)
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			return nil, fmt.Errorf("service account key: %w", err)
		}
		return key, os.Rename(tmp, path)
	}
	if err != nil {
		return nil, fmt.Errorf("service account signing key: %w", err)
	}
	return parsePrivateKey(data, path)
}

func parsePrivateKey(data []byte, path string) (crypto.Signer, error) {
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		var key any
		var err error
		switch block.Type {
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("service account key %s: %w", path, err)
		}
		if s, ok := key.(crypto.Signer); ok {
			return s, nil
		}
		return nil, fmt.Errorf("service account key %s: unsupported key type %T", path, key)
	}
	return nil, fmt.Errorf("service account key %s: no PEM private key", path)
}

// LoadPublicKeys reads the verification keys of a --service-account-key-file: PEM public
// keys, certificates or private keys (whose public half is used).
func LoadPublicKeys(path string) ([]crypto.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--service-account-key-file: %w", err)
	}
	var keys []crypto.PublicKey
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		switch block.Type {
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("--service-account-key-file %s: %w", path, err)
			}
			keys = append(keys, k)
		case "RSA PUBLIC KEY":
			k, err := x509.ParsePKCS1PublicKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("--service-account-key-file %s: %w", path, err)
			}
			keys = append(keys, k)
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("--service-account-key-file %s: %w", path, err)
			}
			keys = append(keys, c.PublicKey)
		case "EC PRIVATE KEY", "RSA PRIVATE KEY", "PRIVATE KEY":
			s, err := parsePrivateKey(pem.EncodeToMemory(block), path)
			if err != nil {
				return nil, err
			}
			keys = append(keys, s.Public())
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("--service-account-key-file %s: no PEM public key", path)
	}
	return keys, nil
}

// keyID names a public key as kube-apiserver does: the unpadded base64url SHA-256 of its
// PKIX encoding.
func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// algorithm is the JWS algorithm of a key.
func algorithm(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
	}
	return "", fmt.Errorf("unsupported service account key type %T", pub)
}
