package auth

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

func bootstrapSecret(mutate func(s *corev1.Secret)) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef", Namespace: "kube-system"},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey:               []byte("abcdef"),
			bootstrapapi.BootstrapTokenSecretKey:           []byte("0123456789abcdef"),
			bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
			bootstrapapi.BootstrapTokenExpirationKey:       []byte("2030-01-01T00:00:00Z"),
		},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func tokensWith(t *testing.T, secrets ...*corev1.Secret) *BootstrapTokens {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range secrets {
		if err := idx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return &BootstrapTokens{secrets: corelisters.NewSecretLister(idx).Secrets("kube-system"),
		now: func() time.Time { return time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC) }}
}

func TestBootstrapTokenAuthentication(t *testing.T) {
	const token = "abcdef.0123456789abcdef"
	for _, tc := range []struct {
		name    string
		secret  *corev1.Secret
		token   string
		ok      bool
		err     string // part of the refusal; "" with ok false: not recognised
		groups  []string
		wantErr bool
	}{
		{name: "valid", secret: bootstrapSecret(nil), token: token, ok: true, groups: []string{"system:bootstrappers"}},
		{name: "extra groups", secret: bootstrapSecret(func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenExtraGroupsKey] = []byte("system:bootstrappers:workers,system:bootstrappers:lab")
		}), token: token, ok: true, groups: []string{"system:bootstrappers", "system:bootstrappers:lab", "system:bootstrappers:workers"}},
		{name: "bad extra group", secret: bootstrapSecret(func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenExtraGroupsKey] = []byte("system:masters")
		}), token: token, err: "auth-extra-groups"},
		{name: "wrong secret", secret: bootstrapSecret(nil), token: "abcdef.0123456789abcdee", err: "invalid value for key token-secret"},
		{name: "expired", secret: bootstrapSecret(func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte("2028-12-31T23:59:59Z")
		}), token: token, err: "expired"},
		{name: "unparseable expiration", secret: bootstrapSecret(func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte("tomorrow")
		}), token: token, err: "expired"},
		{name: "no expiration", secret: bootstrapSecret(func(s *corev1.Secret) {
			delete(s.Data, bootstrapapi.BootstrapTokenExpirationKey)
		}), token: token, ok: true, groups: []string{"system:bootstrappers"}},
		{name: "not for authentication", secret: bootstrapSecret(func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenUsageAuthentication] = []byte("false")
		}), token: token, err: "usage-bootstrap-authentication=true"},
		{name: "usage missing", secret: bootstrapSecret(func(s *corev1.Secret) {
			delete(s.Data, bootstrapapi.BootstrapTokenUsageAuthentication)
		}), token: token, err: "usage-bootstrap-authentication=true"},
		{name: "wrong type", secret: bootstrapSecret(func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), token: token, err: "invalid type"},
		{name: "token-id differs", secret: bootstrapSecret(func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenIDKey] = []byte("zzzzzz")
		}), token: token, err: "token-id"},
		{name: "being deleted", secret: bootstrapSecret(func(s *corev1.Secret) {
			now := metav1.Now()
			s.DeletionTimestamp = &now
		}), token: token, err: "deleted"},
		{name: "no secret", secret: bootstrapSecret(nil), token: "zzzzzz.0123456789abcdef"},
		{name: "not a bootstrap token", secret: bootstrapSecret(nil), token: "eyJhbGciOi.something"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, ok, err := tokensWith(t, tc.secret).Authenticate(context.Background(), tc.token)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (err %v)", ok, tc.ok, err)
			}
			if tc.err == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
			if !ok {
				return
			}
			if u.Name != "system:bootstrap:abcdef" || !reflect.DeepEqual(u.Groups, tc.groups) {
				t.Fatalf("user %+v, want system:bootstrap:abcdef in %v", u, tc.groups)
			}
		})
	}
}
