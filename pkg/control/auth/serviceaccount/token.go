package serviceaccount

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	saauth "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// privateClaims are the "kubernetes.io" claims of a bound token.
type privateClaims struct {
	Kubernetes kubernetesClaims `json:"kubernetes.io"`
}

type kubernetesClaims struct {
	Namespace string           `json:"namespace"`
	SvcAcct   ref              `json:"serviceaccount"`
	Pod       *ref             `json:"pod,omitempty"`
	Secret    *ref             `json:"secret,omitempty"`
	Node      *ref             `json:"node,omitempty"`
	WarnAfter *jwt.NumericDate `json:"warnafter,omitempty"`
}

// ref names a bound object; a node that is gone is named without its uid.
type ref struct {
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
}

// Objects is where tokens' service accounts and pods are looked up: the authenticator
// rejects tokens whose account or pod is gone or was replaced (another UID).
type Objects interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	Node(ctx context.Context, name string) (*corev1.Node, error)
	// Secret is where a legacy token is checked against its Secret's copy, and
	// LabelSecret dates its use.
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	LabelSecret(ctx context.Context, secret *corev1.Secret, key, value string) error
}

// Tokens issues and checks bound service account tokens.
type Tokens struct {
	issuer    string
	audiences []string // the API's own audiences: tokens for others are not accepted here
	signer    jose.Signer
	verify    []verifyKey
	objects   Objects
	now       func() time.Time
}

type verifyKey struct {
	id  string
	alg jose.SignatureAlgorithm
	key crypto.PublicKey
}

// New makes the issuer and authenticator: key signs, publicKeys (the signing key's public
// half among them) verify; issuer is the iss claim, apiAudiences what this API accepts
// (the issuer if empty).
func New(issuer string, apiAudiences []string, key crypto.Signer, publicKeys []crypto.PublicKey, objects Objects) (*Tokens, error) {
	if issuer == "" {
		return nil, errors.New("--service-account-issuer is required")
	}
	if len(apiAudiences) == 0 {
		apiAudiences = []string{issuer}
	}
	t := &Tokens{issuer: issuer, audiences: apiAudiences, objects: objects, now: time.Now}
	for _, pub := range append([]crypto.PublicKey{key.Public()}, publicKeys...) {
		id, err := keyID(pub)
		if err != nil {
			return nil, err
		}
		alg, err := algorithm(pub)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(t.verify, func(k verifyKey) bool { return k.id == id }) {
			t.verify = append(t.verify, verifyKey{id: id, alg: alg, key: pub})
		}
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: t.verify[0].alg, Key: jose.JSONWebKey{Key: key, KeyID: t.verify[0].id}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("service account signer: %w", err)
	}
	t.signer = signer
	return t, nil
}

// Issuer is the iss of every token.
func (t *Tokens) Issuer() string { return t.issuer }

// Request is what a token is issued for.
type Request struct {
	Account *corev1.ServiceAccount
	// The token is bound to at most one of Pod, Secret and Node, which it names with its
	// UID: it holds while that object does.
	Pod    *corev1.Pod
	Secret *corev1.Secret
	// Node is the node a token is bound to, or the bound pod's node, named in the token
	// with its UID (only its name when the Node object is gone), as kube-apiserver's
	// ServiceAccountTokenPodNodeInfo.
	Node      *corev1.Node
	Audiences []string
	Expires   time.Duration
	// WarnAfter, when set, is written into the token's kubernetes.io claims: past it
	// the token is stale though it still works until Expires.
	WarnAfter time.Duration
}

// Issue signs a token for r; it returns the token and its expiry.
func (t *Tokens) Issue(r Request) (string, time.Time, error) {
	now := t.now()
	audiences := r.Audiences
	if len(audiences) == 0 {
		audiences = t.audiences
	}
	exp := now.Add(r.Expires)
	// aud is always a list, as kube-apiserver's go-jose v2 writes it (v4 writes one alone
	// as a string).
	pub := jwt.Claims{Issuer: t.issuer, Subject: saauth.MakeUsername(r.Account.Namespace, r.Account.Name),
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
		Expiry: jwt.NewNumericDate(exp), ID: string(uuid.NewUUID())}
	aud := struct {
		Audience []string `json:"aud"`
	}{audiences}
	priv := privateClaims{Kubernetes: kubernetesClaims{Namespace: r.Account.Namespace,
		SvcAcct: ref{Name: r.Account.Name, UID: string(r.Account.UID)}}}
	switch {
	case r.Pod != nil:
		priv.Kubernetes.Pod = &ref{Name: r.Pod.Name, UID: string(r.Pod.UID)}
		if r.Node != nil {
			priv.Kubernetes.Node = &ref{Name: r.Node.Name, UID: string(r.Node.UID)}
		}
	case r.Secret != nil:
		priv.Kubernetes.Secret = &ref{Name: r.Secret.Name, UID: string(r.Secret.UID)}
	case r.Node != nil:
		priv.Kubernetes.Node = &ref{Name: r.Node.Name, UID: string(r.Node.UID)}
	}
	if r.WarnAfter != 0 {
		priv.Kubernetes.WarnAfter = jwt.NewNumericDate(now.Add(r.WarnAfter))
	}
	token, err := jwt.Signed(t.signer).Claims(pub).Claims(aud).Claims(priv).Serialize()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign service account token: %w", err)
	}
	return token, exp, nil
}

// Audiences are the API's own: what a token must name to be accepted here.
func (t *Tokens) Audiences() []string { return t.audiences }

// errInvalid is what a token of ours that does not verify gets.
var errInvalid = errors.New("invalid bearer token")

// leeway is the clock skew tolerated on exp and nbf, as kube-apiserver's.
const leeway = time.Minute

// Authenticate checks a bearer token: ok is false for tokens that are not ours (another
// issuer, not a JWT), err rejects ours that are expired, for another audience (the API's,
// or those authenticator.WithAudiences put in ctx), or whose service account or pod no
// longer exists.
func (t *Tokens) Authenticate(ctx context.Context, token string) (authn.User, bool, error) {
	if strings.Count(token, ".") != 2 {
		return authn.User{}, false, nil
	}
	algs := make([]jose.SignatureAlgorithm, 0, len(t.verify))
	for _, k := range t.verify {
		algs = append(algs, k.alg)
	}
	tok, err := jwt.ParseSigned(token, algs)
	if err != nil || len(tok.Headers) == 0 {
		return authn.User{}, false, nil
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil || (unverified.Issuer != t.issuer && unverified.Issuer != LegacyIssuer) {
		return authn.User{}, false, nil
	}
	legacy := unverified.Issuer == LegacyIssuer
	var pub jwt.Claims
	var priv privateClaims
	var legacyPriv legacyClaims
	claims := any(&priv)
	if legacy {
		claims = &legacyPriv
	}
	verified := false
	for _, k := range t.verify {
		if kid := tok.Headers[0].KeyID; kid != "" && kid != k.id {
			continue
		}
		if err := tok.Claims(k.key, &pub, claims); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return authn.User{}, false, errInvalid
	}
	if legacy { // no audience of its own: the API's, which a TokenReview may not want
		if wanted, ok := authenticator.AudiencesFrom(ctx); ok && len(authenticator.Audiences(t.audiences).Intersect(wanted)) == 0 {
			return authn.User{}, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", t.audiences, []string(wanted))
		}
		return t.authenticateLegacy(ctx, token, pub, legacyPriv)
	}
	switch err := pub.ValidateWithLeeway(jwt.Expected{Issuer: t.issuer, Time: t.now()}, leeway); {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return authn.User{}, false, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return authn.User{}, false, errors.New("service account token is not valid yet")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return authn.User{}, false, errors.New("service account token is issued in the future")
	default:
		return authn.User{}, false, fmt.Errorf("service account token claims could not be validated: %w", err)
	}
	audiences := t.audiences
	if wanted, ok := authenticator.AudiencesFrom(ctx); ok && len(wanted) > 0 { // a TokenReview's
		audiences = wanted
	}
	if !slices.ContainsFunc(audiences, func(a string) bool { return pub.Audience.Contains(a) }) {
		return authn.User{}, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", []string(pub.Audience), audiences)
	}
	k := priv.Kubernetes
	ns, name, err := saauth.SplitUsername(pub.Subject)
	if err != nil || ns != k.Namespace || name != k.SvcAcct.Name {
		return authn.User{}, false, fmt.Errorf("%w: subject %q does not match its claims", errInvalid, pub.Subject)
	}
	// kube-apiserver's bound token validator, with its wording: what a TokenReview shows.
	deletedBefore := t.now().Add(-leeway)
	gone := func(o metav1.Object) bool {
		return o.GetDeletionTimestamp() != nil && o.GetDeletionTimestamp().Time.Before(deletedBefore)
	}
	sa, err := t.objects.ServiceAccount(ctx, ns, name)
	switch {
	case err != nil:
		return authn.User{}, false, err
	case string(sa.UID) != k.SvcAcct.UID:
		return authn.User{}, false, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, k.SvcAcct.UID)
	case gone(sa):
		return authn.User{}, false, fmt.Errorf("service account %s/%s has been deleted", ns, name)
	}
	info := saauth.ServiceAccountInfo{Name: name, Namespace: ns, UID: k.SvcAcct.UID, CredentialID: "JTI=" + pub.ID}
	if k.Secret != nil {
		secret, err := t.objects.Secret(ctx, ns, k.Secret.Name)
		if err := checkBound("secret", secret, err, k.Secret.UID, gone); err != nil {
			return authn.User{}, false, err
		}
	}
	if k.Pod != nil {
		pod, err := t.objects.Pod(ctx, ns, k.Pod.Name)
		stopped := func(o metav1.Object) bool { // its containers may still need the API a while
			d := o.GetDeletionTimestamp()
			return d != nil && t.now().After(d.Add(deletedPodGrace))
		}
		if err := checkBound("pod", pod, err, k.Pod.UID, stopped); err != nil {
			return authn.User{}, false, err
		}
		info.PodName, info.PodUID = k.Pod.Name, k.Pod.UID
	}
	if k.Node != nil {
		if k.Pod == nil { // bound to the node itself
			node, err := t.objects.Node(ctx, k.Node.Name)
			if err := checkBound("node", node, err, k.Node.UID, gone); err != nil {
				return authn.User{}, false, err
			}
		}
		info.NodeName, info.NodeUID = k.Node.Name, k.Node.UID
	}
	return accountUser(info), true, nil
}

// errInvalidated refuses a token whose bound object is gone.
var errInvalidated = errors.New("service account token has been invalidated")

// checkBound is kube-apiserver's check of the object a token is bound to (looked up with
// err): it exists, has the UID the token names, and is not deleted.
func checkBound(kind string, obj metav1.Object, err error, claimUID string, deleted func(metav1.Object) bool) error {
	switch {
	case err != nil:
		return errInvalidated
	case string(obj.GetUID()) != claimUID:
		return fmt.Errorf("%s UID (%s) does not match service account %s ref claim (%s)", kind, obj.GetUID(), kind, claimUID)
	case deleted(obj):
		return errInvalidated
	}
	return nil
}

// accountUser is the user a service account token authenticates as.
func accountUser(info saauth.ServiceAccountInfo) authn.User {
	u := info.UserInfo()
	return authn.User{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
}

// deletedPodGrace is how long a terminating pod's tokens still work (its containers may
// need the API while they stop), as kube-apiserver allows.
const deletedPodGrace = 60 * time.Second
