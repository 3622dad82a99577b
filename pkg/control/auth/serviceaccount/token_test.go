package serviceaccount

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

type objects struct {
	sas     map[string]*corev1.ServiceAccount
	pods    map[string]*corev1.Pod
	nodes   map[string]*corev1.Node
	secrets map[string]*corev1.Secret
}

func (o *objects) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	if s, ok := o.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

func (o *objects) LabelSecret(_ context.Context, s *corev1.Secret, key, value string) error {
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[key] = value
	return nil
}

func (o *objects) ServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if sa, ok := o.sas[ns+"/"+name]; ok {
		return sa, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}

func (o *objects) Pod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if p, ok := o.pods[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

func (o *objects) Node(_ context.Context, name string) (*corev1.Node, error) {
	if n, ok := o.nodes[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

func TestTokens(t *testing.T) {
	key, err := EnsureSigningKey(filepath.Join(t.TempDir(), "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "robot", UID: "sa-uid"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "pod-uid"}, Spec: corev1.PodSpec{ServiceAccountName: "robot", NodeName: "node-1"}}
	objs := &objects{sas: map[string]*corev1.ServiceAccount{"apps/robot": sa}, pods: map[string]*corev1.Pod{"apps/web": pod}}
	tokens, err := New("https://issuer.example", nil, key, nil, objs)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tokens.now = func() time.Time { return now }
	ctx := context.Background()

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}}
	bound, _, err := tokens.Issue(Request{Account: sa, Pod: pod, Node: node, Expires: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	u, ok, err := tokens.Authenticate(ctx, bound)
	if err != nil || !ok {
		t.Fatalf("bound token: ok=%v err=%v", ok, err)
	}
	// aud is a list even of one, as kube-apiserver writes it.
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(bound, ".")[1])
	if err != nil || !strings.Contains(string(payload), `"aud":["https://issuer.example"]`) {
		t.Errorf("payload %s (%v)", payload, err)
	}
	if u.Name != "system:serviceaccount:apps:robot" || u.UID != "sa-uid" || len(u.Groups) != 2 || u.Groups[1] != "system:serviceaccounts:apps" ||
		u.Extra["authentication.kubernetes.io/pod-name"][0] != "web" || u.Extra["authentication.kubernetes.io/node-name"][0] != "node-1" ||
		len(u.Extra["authentication.kubernetes.io/node-uid"]) != 1 || u.Extra["authentication.kubernetes.io/node-uid"][0] != "node-uid" {
		t.Errorf("user %+v", u)
	}

	// Refusals carry kube-apiserver's reasons (a TokenReview's status.error shows them).
	refused := func(what, token, want string) {
		t.Helper()
		if _, ok, err := tokens.Authenticate(ctx, token); ok || err == nil || err.Error() != want {
			t.Errorf("%s: ok=%v err=%v, want %q", what, ok, err, want)
		}
	}
	other, _, _ := tokens.Issue(Request{Account: sa, Audiences: []string{"vault"}, Expires: time.Hour})
	refused("a token for another audience", other, `token audiences ["vault"] is invalid for the target audiences ["https://issuer.example"]`)
	stranger, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	forger, _ := New("https://issuer.example", nil, stranger, nil, objs)
	forged, _, _ := forger.Issue(Request{Account: sa, Expires: time.Hour})
	if _, ok, err := tokens.Authenticate(ctx, forged); ok || err == nil {
		t.Error("a token signed by another key was accepted")
	}
	elsewhere, _ := New("https://elsewhere.example", nil, stranger, nil, objs)
	foreign, _, _ := elsewhere.Issue(Request{Account: sa, Expires: time.Hour})
	if _, ok, err := tokens.Authenticate(ctx, foreign); ok || err != nil {
		t.Errorf("another issuer's token: ok=%v err=%v, want not ours (no error)", ok, err)
	}
	if _, ok, err := tokens.Authenticate(ctx, "not-a-jwt"); ok || err != nil {
		t.Error("a non-JWT token was claimed")
	}

	now = now.Add(time.Hour + 2*time.Minute)
	refused("an expired token", bound, "service account token has expired")
	now = now.Add(-time.Hour)

	objs.pods["apps/web"] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "new-uid"}}
	refused("the token of a re-created pod", bound, "pod UID (new-uid) does not match service account pod ref claim (pod-uid)")
	delete(objs.pods, "apps/web")
	refused("the token of a deleted pod", bound, "service account token has been invalidated")

	// Tokens bound to a Secret or a Node hold while it does.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "s", UID: "secret-uid"}}
	objs.secrets = map[string]*corev1.Secret{"apps/s": secret}
	objs.nodes = map[string]*corev1.Node{"node-1": node}
	toSecret, _, _ := tokens.Issue(Request{Account: sa, Secret: secret, Expires: time.Hour})
	toNode, _, _ := tokens.Issue(Request{Account: sa, Node: node, Expires: time.Hour})
	for what, token := range map[string]string{"secret": toSecret, "node": toNode} {
		if _, ok, err := tokens.Authenticate(ctx, token); !ok || err != nil {
			t.Errorf("token bound to a %s: ok=%v err=%v", what, ok, err)
		}
	}
	if u, _, _ := tokens.Authenticate(ctx, toNode); len(u.Extra["authentication.kubernetes.io/node-uid"]) != 1 || len(u.Extra["authentication.kubernetes.io/pod-name"]) != 0 {
		t.Errorf("node-bound token's user %+v", u)
	}
	objs.secrets["apps/s"] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "s", UID: "new"}}
	refused("the token of a re-created secret", toSecret, "secret UID (new) does not match service account secret ref claim (secret-uid)")
	delete(objs.secrets, "apps/s")
	refused("the token of a deleted secret", toSecret, "service account token has been invalidated")
	delete(objs.nodes, "node-1")
	refused("the token of a deleted node", toNode, "service account token has been invalidated")

	unbound, _, _ := tokens.Issue(Request{Account: sa, Expires: time.Hour})
	delete(objs.sas, "apps/robot")
	refused("the token of a deleted service account", unbound, `serviceaccounts "robot" not found`)

	w := httptest.NewRecorder()
	tokens.ServeJWKS()(w, httptest.NewRequest("GET", JWKSPath, nil))
	var jwks struct {
		Keys []struct{ Kid, Alg, Kty, Use string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &jwks); err != nil || len(jwks.Keys) != 1 || jwks.Keys[0].Alg != "ES256" || jwks.Keys[0].Kid == "" {
		t.Errorf("jwks %s (%v)", w.Body, err)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/jwk-set+json" {
		t.Errorf("jwks Content-Type %q, want kube-apiserver's application/jwk-set+json", ct)
	}
	w = httptest.NewRecorder()
	tokens.ServeDiscovery("https://api/openid/v1/jwks")(w, httptest.NewRequest("GET", DiscoveryPath, nil))
	if !strings.Contains(w.Body.String(), `"issuer":"https://issuer.example"`) || !strings.Contains(w.Body.String(), `"jwks_uri":"https://api/openid/v1/jwks"`) {
		t.Errorf("discovery %s", w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("discovery Content-Type %q", ct)
	}
}

func TestTokenPath(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/v1/namespaces/ns/serviceaccounts/sa/token":  true,
		"/api/v1/namespaces/ns/serviceaccounts/sa":        false,
		"/api/v1/namespaces//serviceaccounts/sa/token":    false,
		"/api/v1/namespaces/ns/pods/sa/token":             false,
		"/apis/v1/namespaces/ns/serviceaccounts/sa/token": false,
	} {
		if _, _, ok := TokenPath(path); ok != want {
			t.Errorf("TokenPath(%q) = %v, want %v", path, ok, want)
		}
	}
}

// TestTokenRequest: defaults, limits, pod binding, and a node only for its own pods.
func TestTokenRequest(t *testing.T) {
	key, err := EnsureSigningKey(filepath.Join(t.TempDir(), "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "robot", UID: "sa-uid"}}
	objs := &objects{sas: map[string]*corev1.ServiceAccount{"apps/robot": sa}, pods: map[string]*corev1.Pod{
		"apps/on-1":  {ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "on-1", UID: "u1"}, Spec: corev1.PodSpec{ServiceAccountName: "robot", NodeName: "node-1"}},
		"apps/on-2":  {ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "on-2", UID: "u2"}, Spec: corev1.PodSpec{ServiceAccountName: "robot", NodeName: "node-2"}},
		"apps/other": {ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "other", UID: "u3"}, Spec: corev1.PodSpec{ServiceAccountName: "default", NodeName: "node-1"}},
	}}
	tokens, err := New("https://issuer.example", nil, key, nil, objs)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admin := authn.User{Name: "admin", Groups: []string{"system:masters"}}
	node1 := authn.User{Name: "system:node:node-1", Groups: []string{"system:nodes"}}
	pod := func(name, uid string) *authnv1.TokenRequest {
		return &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: name, UID: types.UID(uid)}}}
	}
	resp, err := tokens.tokenRequest(ctx, admin, "apps", "robot", &authnv1.TokenRequest{})
	if err != nil || *resp.Spec.ExpirationSeconds != 3600 || resp.Spec.Audiences[0] != "https://issuer.example" || resp.Status.Token == "" {
		t.Fatalf("defaults: %v %+v", err, resp)
	}
	if resp.UID != "sa-uid" { // kube-apiserver answers with the account's UID
		t.Errorf("metadata.uid %q, want the service account's", resp.UID)
	}
	objs.secrets = map[string]*corev1.Secret{"apps/s": {ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "s", UID: "su"}}}
	bind := func(kind, name string) *authnv1.TokenRequest {
		return &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: &authnv1.BoundObjectReference{Kind: kind, APIVersion: "v1", Name: name}}}
	}
	message := func(want string) func(error) bool {
		return func(err error) bool { return err != nil && err.Error() == want }
	}
	for _, tc := range []struct {
		name  string
		user  authn.User
		sa    string
		req   *authnv1.TokenRequest
		check func(error) bool
	}{
		{"too short", admin, "robot", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](60)}},
			message(`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes`)},
		{"too long", admin, "robot", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](1<<32 + 1)}},
			message(`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds`)},
		{"too short for no account", admin, "ghost", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](60)}}, apierrors.IsNotFound},
		{"bound to a secret", admin, "robot", bind("Secret", "s"), func(err error) bool { return err == nil }},
		{"bound to a missing secret", admin, "robot", bind("Secret", "gone"), message(`secrets "gone" not found`)},
		{"bound to a missing node", admin, "robot", bind("Node", "gone"), message(`nodes "gone" not found`)},
		{"bound to a ConfigMap", admin, "robot", bind("ConfigMap", "c"), message("cannot bind token to object of type /v1, Kind=ConfigMap")},
		{"no such account", admin, "ghost", &authnv1.TokenRequest{}, apierrors.IsNotFound},
		{"another account's UID", admin, "robot", &authnv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: "old"}},
			message(`Operation cannot be fulfilled on TokenRequest.authentication.k8s.io "robot": the UID in the token request (old) does not match the UID of the service account (sa-uid)`)},
		{"the account's UID", admin, "robot", &authnv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: "sa-uid"}}, func(err error) bool { return err == nil }},
		{"no such pod", admin, "robot", pod("gone", ""), apierrors.IsNotFound},
		{"pod re-created", admin, "robot", pod("on-1", "old"), apierrors.IsConflict},
		{"pod of another account", admin, "robot", pod("other", ""), apierrors.IsBadRequest},
		{"node: unbound", node1, "robot", &authnv1.TokenRequest{}, apierrors.IsForbidden},
		{"node: another node's pod", node1, "robot", pod("on-2", "u2"), apierrors.IsForbidden},
		{"node: its pod", node1, "robot", pod("on-1", "u1"), func(err error) bool { return err == nil }},
	} {
		_, err := tokens.tokenRequest(ctx, tc.user, "apps", tc.sa, tc.req)
		if !tc.check(err) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}

	// A token bound to a pod names its node with the node's UID (the ServiceAccounts
	// conformance test reviews it for node-uid), or by name alone when the node is gone.
	objs.nodes = map[string]*corev1.Node{"node-1": {ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-1-uid"}}}
	for pod, want := range map[string][]string{"on-1": {"node-1", "node-1-uid"}, "on-2": {"node-2"}} {
		resp, err := tokens.tokenRequest(ctx, admin, "apps", "robot", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
			BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod}}})
		if err != nil {
			t.Fatal(err)
		}
		u, ok, err := tokens.Authenticate(ctx, resp.Status.Token)
		if !ok || err != nil {
			t.Fatalf("token bound to %s: %v", pod, err)
		}
		got := append(u.Extra["authentication.kubernetes.io/node-name"], u.Extra["authentication.kubernetes.io/node-uid"]...)
		if !slices.Equal(got, want) {
			t.Errorf("token bound to %s names node %q, want %q", pod, got, want)
		}
		// kube-apiserver leaves an unknown uid out of the claim rather than writing "".
		payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(resp.Status.Token, ".")[1])
		if strings.Contains(string(payload), `"uid":""`) {
			t.Errorf("token bound to %s: claims %s hold an empty uid", pod, payload)
		}
	}
}

// TestTokenRequestExtendedExpiration: as kube-apiserver's --service-account-extend-token-expiration
// (on by default), a pod-bound token for the API of the kube-api-access volume's 3607 s
// lives a year, its kubernetes.io claims naming warnafter at the 3607 s the status
// reports; any other duration, audience or binding is taken as asked.
func TestTokenRequestExtendedExpiration(t *testing.T) {
	key, err := EnsureSigningKey(filepath.Join(t.TempDir(), "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "robot", UID: "sa-uid"}}
	objs := &objects{sas: map[string]*corev1.ServiceAccount{"apps/robot": sa}, pods: map[string]*corev1.Pod{
		"apps/web": {ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "u1"}, Spec: corev1.PodSpec{ServiceAccountName: "robot"}}}}
	tokens, err := New("https://issuer.example", nil, key, nil, objs)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	tokens.now = func() time.Time { return now }
	admin := authn.User{Name: "admin", Groups: []string{"system:masters"}}
	toPod := &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"}
	for _, tc := range []struct {
		name      string
		spec      authnv1.TokenRequestSpec
		exp       int64
		warnAfter int64
	}{
		{"kube-api-access", authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3607), BoundObjectRef: toPod}, 365 * 24 * 3600, 3607},
		{"for the API by name", authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3607), BoundObjectRef: toPod, Audiences: []string{"https://issuer.example"}}, 365 * 24 * 3600, 3607},
		{"another audience", authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3607), BoundObjectRef: toPod, Audiences: []string{"vault"}}, 3607, 0},
		{"not bound to a pod", authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3607)}, 3607, 0},
		{"another duration", authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600), BoundObjectRef: toPod}, 3600, 0},
	} {
		resp, err := tokens.tokenRequest(context.Background(), admin, "apps", "robot", &authnv1.TokenRequest{Spec: tc.spec})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := resp.Status.ExpirationTimestamp.Time; !got.Equal(now.Add(time.Duration(*tc.spec.ExpirationSeconds) * time.Second)) {
			t.Errorf("%s: status.expirationTimestamp %v, want the %d s asked", tc.name, got, *tc.spec.ExpirationSeconds)
		}
		payload, err := base64.RawURLEncoding.DecodeString(strings.Split(resp.Status.Token, ".")[1])
		if err != nil {
			t.Fatal(err)
		}
		var claims struct {
			Exp        int64 `json:"exp"`
			Kubernetes struct {
				WarnAfter int64 `json:"warnafter"`
			} `json:"kubernetes.io"`
		}
		if err := json.Unmarshal(payload, &claims); err != nil {
			t.Fatal(err)
		}
		wantWarnAfter := int64(0)
		if tc.warnAfter != 0 {
			wantWarnAfter = now.Unix() + tc.warnAfter
		}
		if claims.Exp != now.Unix()+tc.exp || claims.Kubernetes.WarnAfter != wantWarnAfter {
			t.Errorf("%s: exp %d warnafter %d, want %d and %d", tc.name, claims.Exp-now.Unix(), claims.Kubernetes.WarnAfter, tc.exp, wantWarnAfter)
		}
	}
}

// TestLegacyTokens: a legacy token authenticates as its account while its Secret holds it
// and the account is the one it names, refused otherwise with kube-apiserver's reasons.
func TestLegacyTokens(t *testing.T) {
	key, err := EnsureSigningKey(filepath.Join(t.TempDir(), "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "robot", UID: "sa-uid"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "robot-token"}}
	objs := &objects{sas: map[string]*corev1.ServiceAccount{"apps/robot": sa}, secrets: map[string]*corev1.Secret{"apps/robot-token": secret}}
	tokens, err := New("https://issuer.example", nil, key, nil, objs)
	if err != nil {
		t.Fatal(err)
	}
	token, err := tokens.IssueLegacy(sa, "robot-token")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(what, wantErr string) {
		t.Helper()
		u, ok, err := tokens.Authenticate(ctx, token)
		switch {
		case wantErr == "" && (err != nil || !ok || u.Name != "system:serviceaccount:apps:robot" || u.UID != "sa-uid"):
			t.Errorf("%s: user %+v ok=%v err=%v", what, u, ok, err)
		case wantErr != "" && (ok || err == nil || err.Error() != wantErr):
			t.Errorf("%s: ok=%v err=%v, want %q", what, ok, err, wantErr)
		}
	}
	check("a Secret without the token", "Token does not match server's copy")
	secret.Data = map[string][]byte{"token": []byte(token)}
	check("the Secret's token", "")
	if got, want := secret.Labels[LastUsedLabelKey], time.Now().UTC().Format(time.DateOnly); got != want {
		t.Errorf("last used %q, want %q", got, want)
	}
	secret.Labels[InvalidSinceLabelKey] = "2026-01-01"
	check("a token marked invalid", "the token in secret apps/robot-token for service account apps/robot has been marked invalid. "+
		"Use tokens from the TokenRequest API or manually created secret-based tokens, or remove the 'kubernetes.io/legacy-token-invalid-since' label from the secret to temporarily allow use of this token")
	delete(secret.Labels, InvalidSinceLabelKey)
	sa.UID = "other"
	check("another account of that name", "ServiceAccount UID (other) does not match claim (sa-uid)")
	sa.UID = "sa-uid"
	delete(objs.secrets, "apps/robot-token")
	check("the Secret deleted", "Token has been invalidated")
}
