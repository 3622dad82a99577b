package controlplane

import (
	"context"
	"crypto"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"

	"github.com/minik8s/minik8s/pkg/control/admission/certificates"
	"github.com/minik8s/minik8s/pkg/control/apiserver"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/auth"
	"github.com/minik8s/minik8s/pkg/control/auth/serviceaccount"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// Security is miniapi's authentication and authorization settings.
type Security struct {
	// AuthorizationModes is --authorization-mode (nil: Node,RBAC).
	AuthorizationModes []string
	// ServiceAccountSigningKeyFile signs tokens (""': DATA_DIR/pki/sa.key, made on first start);
	// ServiceAccountKeyFiles verify them besides its public half.
	ServiceAccountSigningKeyFile string
	ServiceAccountKeyFiles       []string
	// ServiceAccountIssuer is the iss of tokens ("": https://kubernetes.default.svc.cluster.local);
	// APIAudiences what this server accepts ("" : the issuer).
	ServiceAccountIssuer string
	APIAudiences         []string
	// Audit is the audit log (--audit-log-path, --audit-policy-file, ...; off when either is "").
	Audit filters.AuditOptions
}

// DefaultIssuer is kube-apiserver's usual --service-account-issuer.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

func (s *Security) validate() error {
	if s.AuthorizationModes != nil {
		if err := auth.ValidateModes(s.AuthorizationModes); err != nil {
			return err
		}
	}
	return nil
}

func (s *Security) modes() []string {
	if s.AuthorizationModes == nil {
		return auth.DefaultModes
	}
	return s.AuthorizationModes
}

// guard is the authentication, authorization and the handlers outside the registry
// (TokenRequest, OIDC discovery) around the API server's handler; the access and token
// reviews are API server extensions it installs.
type guard struct {
	ready   *atomic.Bool // the caches are filled and the policy reconciled: /readyz's post-start hook
	auditor *filters.Auditor
	authz   *auth.Authorizers
	tokens  *serviceaccount.Tokens
	// bootstrap authenticates bootstrap tokens (node bootstrap)
	bootstrap *auth.BootstrapTokens
	handler   http.Handler
}

// newGuard builds the chain; privileged is the API server's own loopback identity
// (system:masters), which shared, the process's informers, read through.
func newGuard(o Options, privileged kubernetes.Interface, shared informers.SharedInformerFactory, srv *apiserver.Server, static authn.Tokens, ready *atomic.Bool) (*guard, error) {
	api := srv.Handler()
	sec := o.Security
	authz, err := auth.New(sec.modes(), privileged, shared)
	if err != nil {
		return nil, err
	}
	keyPath := sec.ServiceAccountSigningKeyFile
	if keyPath == "" {
		keyPath = filepath.Join(PKIDir(o.DataDir), "sa.key")
	}
	key, err := serviceaccount.EnsureSigningKey(keyPath)
	if err != nil {
		return nil, err
	}
	var pubs []crypto.PublicKey
	for _, f := range sec.ServiceAccountKeyFiles {
		k, err := serviceaccount.LoadPublicKeys(f)
		if err != nil {
			return nil, err
		}
		pubs = append(pubs, k...)
	}
	issuer := sec.ServiceAccountIssuer
	if issuer == "" {
		issuer = DefaultIssuer
	}
	tokens, err := serviceaccount.New(issuer, sec.APIAudiences, key, pubs, authz)
	if err != nil {
		return nil, err
	}
	if authz.Escalation != nil {
		srv.SetWriteGuard(authz.Escalation.Check)
	}
	// kube-apiserver's CSR plugins (CertificateApproval, CertificateSigning,
	// CertificateSubjectRestriction) ask the authorizer, made only now.
	for _, p := range []generic.ValidatingAdmission{certificates.Approval{Authorizer: authz}, certificates.Signing{Authorizer: authz}, certificates.SubjectRestriction{}} {
		srv.AddValidatingAdmission(p)
	}
	g := &guard{ready: ready, authz: authz, tokens: tokens, bootstrap: auth.NewBootstrapTokens(privileged)}
	reviews := &auth.Reviews{Authorizer: authz, Rules: authz.Rules, Tokens: &auth.TokenReviewer{APIAudiences: tokens.Audiences(),
		Agnostic: []authn.TokenAuthenticator{static.Authenticate, g.bootstrap.Authenticate}, Bound: []authn.TokenAuthenticator{tokens.Authenticate}}}
	for _, e := range reviews.Extensions() {
		srv.AddExtension(e)
	}
	routes := http.NewServeMux()
	routes.Handle(serviceaccount.DiscoveryPath, tokens.ServeDiscovery(o.externalURL()+serviceaccount.JWKSPath))
	routes.Handle(serviceaccount.JWKSPath, tokens.ServeJWKS())
	routes.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ns, name, ok := serviceaccount.TokenPath(r.URL.Path); ok {
			if r.Method == http.MethodPost {
				if err := srv.AdmitNamespacedCreate(r.Context(), corev1.SchemeGroupVersion.WithResource("serviceaccounts"), "token", ns, name); err != nil {
					responsewriters.WriteError(w, err)
					return
				}
			}
			tokens.ServeTokenRequest(w, r, ns, name)
			return
		}
		api.ServeHTTP(w, r)
	}))
	if g.auditor, err = filters.NewAuditor(sec.Audit); err != nil {
		return nil, err
	}
	g.handler = authn.Authenticate(g.auditor.Handler(filters.Authorize(routes, authz)), static, g.bootstrap.Authenticate, tokens.Authenticate)
	return g, nil
}

// start waits for the authorization caches (their factory started), fills the bootstrap
// tokens' and reconciles the bootstrap policy; until then only system:masters gets in.
func (g *guard) start(ctx context.Context, privileged kubernetes.Interface, o Options) error {
	err := g.authz.WaitForCacheSync(ctx)
	if err == nil {
		err = g.bootstrap.Start(ctx)
	}
	if err == nil {
		if err = auth.ReconcilePolicy(ctx, privileged, o.Log); err != nil {
			err = fmt.Errorf("bootstrap RBAC policy: %w", err)
		}
	}
	if ctx.Err() != nil {
		return nil // stopped while starting: not a failure
	}
	g.ready.Store(err == nil)
	return err
}
