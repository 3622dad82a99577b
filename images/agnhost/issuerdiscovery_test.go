package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/auth/serviceaccount"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVerifyByDiscovery: a token miniapi's issuer signs verifies against miniapi's
// discovery document and JWKS handlers, served over TLS as the API server serves them;
// one for another audience, or signed by a key the JWKS does not hold, does not.
func TestVerifyByDiscovery(t *testing.T) {
	routes := http.NewServeMux()
	server := httptest.NewTLSServer(routes)
	t.Cleanup(server.Close)
	issuer := func(keyFile string) *serviceaccount.Tokens {
		key, err := serviceaccount.EnsureSigningKey(filepath.Join(t.TempDir(), keyFile))
		if err != nil {
			t.Fatal(err)
		}
		tokens, err := serviceaccount.New(server.URL, nil, key, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tokens
	}
	tokens, stranger := issuer("sa.key"), issuer("other.key")
	routes.Handle(serviceaccount.DiscoveryPath, tokens.ServeDiscovery(server.URL+serviceaccount.JWKSPath))
	routes.Handle(serviceaccount.JWKSPath, tokens.ServeJWKS())

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default", UID: "sa-uid"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "oidc-discovery-validator", UID: "pod-uid"}}
	issue := func(t *testing.T, by *serviceaccount.Tokens, audience string) string {
		token, _, err := by.Issue(serviceaccount.Request{Account: sa, Pod: pod, Audiences: []string{audience}, Expires: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	ctx := context.Background()
	if err := verifyByDiscovery(ctx, server.Client(), issue(t, tokens, "oidc-discovery-test"), "oidc-discovery-test"); err != nil {
		t.Errorf("the pod's token: %v", err)
	}
	if err := verifyByDiscovery(ctx, server.Client(), issue(t, tokens, "api"), "oidc-discovery-test"); err == nil || !strings.Contains(err.Error(), "audience") {
		t.Errorf("a token for another audience: %v", err)
	}
	if err := verifyByDiscovery(ctx, server.Client(), issue(t, stranger, "oidc-discovery-test"), "oidc-discovery-test"); err == nil {
		t.Error("a token signed by a key not in the JWKS verified")
	}
	if err := verifyByDiscovery(ctx, http.DefaultClient, issue(t, tokens, "oidc-discovery-test"), "oidc-discovery-test"); err == nil {
		t.Error("an issuer whose CA the client does not trust was used")
	}
}
