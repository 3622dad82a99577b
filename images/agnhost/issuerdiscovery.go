package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
)

// issuerDiscoveryCommand is the ServiceAccountIssuerDiscovery test's pod: it verifies its
// projected token as any OIDC relying party would, by its issuer's discovery document
// and key set. It asks the API server first, trusting only the cluster CA since the
// request carries the pod's token, then the issuer as an outside server, without it;
// exit 0 means the token verified.
func issuerDiscoveryCommand() *cobra.Command {
	var tokenPath, audience string
	cmd := &cobra.Command{
		Use:   "test-service-account-issuer-discovery",
		Short: "Verifies a service account token against its issuer's OIDC discovery endpoints",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			raw, err := os.ReadFile(tokenPath)
			if err != nil {
				return err
			}
			log.Print("OK: Got token")
			token := strings.TrimSpace(string(raw))
			inCluster, err := inClusterClient()
			if err != nil {
				return err
			}
			log.Print("validating with in-cluster discovery")
			err = verifyByDiscovery(context.Background(), inCluster, token, audience)
			if err == nil {
				return nil
			}
			log.Print("failed to validate with in-cluster discovery: ", err)
			log.Print("falling back to validating with external discovery")
			return verifyByDiscovery(context.Background(), http.DefaultClient, token, audience)
		},
	}
	cmd.Flags().StringVar(&tokenPath, "token-path", "", "path of the service account token to verify")
	cmd.Flags().StringVar(&audience, "audience", "", "audience the token must be for")
	return cmd
}

// inClusterClient reaches the API server with the cluster CA and the pod's own token.
func inClusterClient() (*http.Client, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("in-cluster transport: %v", err)
	}
	return &http.Client{Transport: rt}, nil
}

// serviceAccountClaims are a Kubernetes service account token's claims, logged after
// verification.
type serviceAccountClaims struct {
	jwt.Claims
	Kubernetes struct {
		Namespace      string `json:"namespace"`
		ServiceAccount struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
}

var tokenAlgorithms = []string{oidc.RS256, oidc.ES256}

// verifyByDiscovery reads the token's issuer unverified, fetches the issuer's discovery
// document through client (its issuer must be the token's) and its JWKS, and checks the
// token's signature, audience and lifetime.
func verifyByDiscovery(ctx context.Context, client *http.Client, raw, audience string) error {
	algs := make([]jose.SignatureAlgorithm, len(tokenAlgorithms))
	for i, a := range tokenAlgorithms {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	parsed, err := jwt.ParseSigned(raw, algs)
	if err != nil {
		return fmt.Errorf("parsing the token: %v", err)
	}
	var unverified serviceAccountClaims
	if err := parsed.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return fmt.Errorf("reading the token's claims: %v", err)
	}
	log.Printf("OK: got issuer %s", unverified.Issuer)

	ctx = oidc.ClientContext(ctx, client)
	provider, err := oidc.NewProvider(ctx, unverified.Issuer)
	if err != nil {
		return err
	}
	log.Printf("OK: Constructed OIDC provider for issuer %v", unverified.Issuer)
	verified, err := provider.Verifier(&oidc.Config{ClientID: audience, SupportedSigningAlgs: tokenAlgorithms}).Verify(ctx, raw)
	if err != nil {
		return err
	}
	log.Print("OK: Validated signature on JWT")
	var claims serviceAccountClaims
	if err := verified.Claims(&claims); err != nil {
		return err
	}
	log.Printf("OK: Got valid claims from token: %s/%s for %v", claims.Kubernetes.Namespace, claims.Kubernetes.ServiceAccount.Name, claims.Audience)
	return nil
}
