package controlplane

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestOIDCDiscoveryInCluster: what the ServiceAccountIssuerDiscovery conformance test's
// pod does. With its own service account token (allowed by the bootstrap binding of
// system:service-account-issuer-discovery) and trusting only the cluster CA, it reaches
// the API at the default issuer's host, kubernetes.default.svc.cluster.local (the
// serving certificate must name it), reads the discovery document (issuer, jwks_uri at
// the advertise address) and verifies a token made for another audience by the JWKS.
func TestOIDCDiscoveryInCluster(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	token := c.serviceAccountTokens(t, "validator")

	admin, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	pod := rest.AnonymousClientConfig(admin) // the cluster CA only
	pod.BearerToken = token()
	server := admin.Host[len("https://"):]
	var dialer net.Dialer
	pod.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) { // cluster DNS stand-in
		return dialer.DialContext(ctx, network, server)
	}
	rt, err := rest.TransportFor(pod)
	if err != nil {
		t.Fatal(err)
	}
	octx := oidc.ClientContext(ctx, &http.Client{Transport: rt})

	provider, err := oidc.NewProvider(octx, DefaultIssuer)
	if err != nil {
		t.Fatalf("discovery at the default issuer: %v", err)
	}
	var doc struct {
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := provider.Claims(&doc); err != nil || doc.JWKSURI != c.url+"/openid/v1/jwks" || len(doc.Algs) == 0 {
		t.Errorf("discovery document %+v (%v), want jwks_uri %s/openid/v1/jwks", doc, err, c.url)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: "oidc-discovery-test", SupportedSigningAlgs: []string{oidc.RS256, oidc.ES256}})
	if _, err := verifier.Verify(octx, token("oidc-discovery-test")); err != nil {
		t.Errorf("the projected token did not verify by the JWKS: %v", err)
	}
	if _, err := verifier.Verify(octx, token("another")); err == nil {
		t.Error("a token for another audience verified")
	}
}
