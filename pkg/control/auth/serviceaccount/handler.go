package serviceaccount

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	saadmission "github.com/minik8s/minik8s/pkg/control/admission/serviceaccount"
	"github.com/minik8s/minik8s/pkg/control/apiserver"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/auth"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TokenRequest limits, as kube-apiserver's.
const (
	defaultExpiration = time.Hour
	minExpiration     = 10 * time.Minute
	// A pod-bound token for the API of the kube-api-access volume's lifetime lives this
	// long instead, stale (warnafter) after the lifetime asked for: kube-apiserver's
	// --service-account-extend-token-expiration, on by default, so that clients which
	// never reread their token keep working while the staleness shows.
	extendedExpiration = 365 * 24 * time.Hour
)

// ServeTokenRequest answers POST .../namespaces/NS/serviceaccounts/NAME/token (already
// authenticated and authorized): a token for the account, bound to a pod if asked.
func (t *Tokens) ServeTokenRequest(w http.ResponseWriter, r *http.Request, namespace, name string) {
	if r.Method != http.MethodPost {
		responsewriters.WriteError(w, apierrors.NewMethodNotSupported(corev1.Resource("serviceaccounts/token"), r.Method))
		return
	}
	var req authnv1.TokenRequest
	if err := apiserver.DecodeBody(r, &req, authnv1.SchemeGroupVersion.WithKind("TokenRequest")); err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	u, _ := authn.UserFrom(r.Context())
	resp, err := t.tokenRequest(r.Context(), u, namespace, name, &req)
	if err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	responsewriters.WriteObject(w, http.StatusCreated, resp, authnv1.SchemeGroupVersion.WithKind("TokenRequest"))
}

func (t *Tokens) tokenRequest(ctx context.Context, requester authn.User, namespace, name string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	invalid := func(name string, errs field.ErrorList) error {
		return apierrors.NewInvalid(authnv1.SchemeGroupVersion.WithKind("TokenRequest").GroupKind(), name, errs)
	}
	if req.Name != "" && req.Name != name {
		return nil, invalid(name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != namespace {
		return nil, invalid(name, field.ErrorList{field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified")})
	}
	sa, err := t.objects.ServiceAccount(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	// A request for an account that was re-created since its UID was read is refused
	// (kube-apiserver's TokenRequestServiceAccountUIDValidation, on by default).
	if req.UID != "" && req.UID != sa.UID {
		return nil, apierrors.NewConflict(authnv1.SchemeGroupVersion.WithResource("TokenRequest").GroupResource(), name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}
	// Validated after the account is found, under no name, as kube-apiserver does.
	expires := defaultExpiration
	if s := req.Spec.ExpirationSeconds; s != nil {
		expires = time.Duration(*s) * time.Second
		path := field.NewPath("spec", "expirationSeconds")
		if expires < minExpiration {
			return nil, invalid("", field.ErrorList{field.Invalid(path, *s, "may not specify a duration less than 10 minutes")})
		}
		if *s > 1<<32 {
			return nil, invalid("", field.ErrorList{field.Invalid(path, *s, "may not specify a duration larger than 2^32 seconds")})
		}
	}
	issue := Request{Account: sa, Audiences: req.Spec.Audiences, Expires: expires}
	// A node gets tokens only bound to its own pods (NodeRestriction's rule).
	node, isNode := auth.NodeName(requester.Info())
	if isNode && (req.Spec.BoundObjectRef == nil || req.Spec.BoundObjectRef.Kind != "Pod") {
		return nil, apierrors.NewForbidden(corev1.Resource("serviceaccounts/token"), name, fmt.Errorf("node requested token not bound to a pod"))
	}
	if b := req.Spec.BoundObjectRef; b != nil {
		gvk := schema.FromAPIVersionAndKind(b.APIVersion, b.Kind)
		var uid types.UID
		switch {
		case gvk.Group == "" && gvk.Kind == "Pod":
			pod, err := t.objects.Pod(ctx, namespace, b.Name)
			if err != nil {
				return nil, err
			}
			if isNode && pod.Spec.NodeName != node {
				return nil, apierrors.NewForbidden(corev1.Resource("serviceaccounts/token"), name,
					fmt.Errorf("node requested token bound to a pod scheduled on a different node"))
			}
			if auth.ServiceAccountOf(pod) != name {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", name))
			}
			issue.Pod, uid = pod, pod.UID
			if pod.Spec.NodeName != "" {
				node, err := t.objects.Node(ctx, pod.Spec.NodeName)
				switch {
				case apierrors.IsNotFound(err): // still named, without its UID
					node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pod.Spec.NodeName}}
				case err != nil:
					return nil, apierrors.NewInternalError(err)
				}
				issue.Node = node
			}
		case gvk.Group == "" && gvk.Kind == "Node":
			node, err := t.objects.Node(ctx, b.Name)
			if err != nil {
				return nil, err
			}
			issue.Node, uid = node, node.UID
		case gvk.Group == "" && gvk.Kind == "Secret":
			secret, err := t.objects.Secret(ctx, namespace, b.Name)
			if err != nil {
				return nil, err
			}
			issue.Secret, uid = secret, secret.UID
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
		}
		if b.UID != "" && b.UID != uid {
			return nil, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, b.Name,
				fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", b.UID))
		}
	}
	if issue.Pod != nil && expires == saadmission.TokenExpirationSeconds*time.Second && t.forTheAPI(req.Spec.Audiences) {
		issue.WarnAfter, issue.Expires = expires, extendedExpiration
	}
	now := t.now()
	token, _, err := t.Issue(issue)
	if err != nil {
		return nil, err
	}
	out := req.DeepCopy()
	out.Name, out.Namespace, out.UID = name, namespace, sa.UID
	out.CreationTimestamp = metav1.NewTime(now)
	if len(out.Spec.Audiences) == 0 {
		out.Spec.Audiences = t.audiences
	}
	secs := int64(expires / time.Second)
	out.Spec.ExpirationSeconds = &secs
	// The expiry asked for, even when the token's own is extended.
	out.Status = authnv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(now.Add(expires))}
	return out, nil
}

// forTheAPI: every audience asked for (none means the API's) is one of the API's own.
func (t *Tokens) forTheAPI(audiences []string) bool {
	for _, a := range audiences {
		if !slices.Contains(t.audiences, a) {
			return false
		}
	}
	return true
}

// OIDC discovery paths.
const (
	DiscoveryPath = "/.well-known/openid-configuration"
	JWKSPath      = "/openid/v1/jwks"
)

// ServeDiscovery answers the OIDC discovery document; jwksURI is where the keys are
// served (the API server's external URL + JWKSPath).
func (t *Tokens) ServeDiscovery(jwksURI string) http.HandlerFunc {
	algs := map[string]bool{}
	for _, k := range t.verify {
		algs[string(k.alg)] = true
	}
	doc := map[string]any{
		"issuer":                                t.issuer,
		"jwks_uri":                              jwksURI,
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": slices.Sorted(maps.Keys(algs)),
	}
	body, _ := json.Marshal(doc) // plain maps and strings
	return serveJSON("application/json", body)
}

// ServeJWKS answers the public keys that verify tokens, as a JSON Web Key Set.
func (t *Tokens) ServeJWKS() http.HandlerFunc {
	set := jose.JSONWebKeySet{}
	for _, k := range t.verify {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.key, KeyID: k.id, Algorithm: string(k.alg), Use: "sig"})
	}
	body, err := json.Marshal(set)
	if err != nil {
		body = []byte(`{"keys":[]}`)
	}
	return serveJSON("application/jwk-set+json", body)
}

// serveJSON answers body of contentType, as kube-apiserver does: a key set as
// application/jwk-set+json (RFC 7517), both cacheable for an hour.
func serveJSON(contentType string, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(body)
	}
}

// TokenPath splits /api/v1/namespaces/NS/serviceaccounts/NAME/token.
func TokenPath(path string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/api/v1/namespaces/")
	if !ok {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[1] != "serviceaccounts" || parts[3] != "token" || parts[0] == "" || parts[2] == "" {
		return "", "", false
	}
	return parts[0], parts[2], true
}
