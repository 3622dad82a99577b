package controlplane

import (
	"context"
	"slices"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serviceAccountTokens creates the ServiceAccount name in default and returns what mints
// its tokens through TokenRequest, for audiences (the API server's own when none).
func (c *cluster) serviceAccountTokens(t *testing.T, name string) func(audiences ...string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return func(audiences ...string) string {
		tr, err := c.client.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
}

// TokenReview answers as kube-apiserver's: who a service account token is, for the
// audiences the review and the token share; a token for other audiences, or no token of
// ours, is not authenticated.
func TestTokenReview(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	token := c.serviceAccountTokens(t, "delegate")
	review := func(token string, audiences ...string) authnv1.TokenReviewStatus {
		t.Helper()
		r, err := c.client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}

	st := review(token())
	if !st.Authenticated || st.User.Username != "system:serviceaccount:default:delegate" || !slices.Contains(st.User.Groups, "system:serviceaccounts:default") ||
		!slices.Contains(st.User.Groups, "system:authenticated") || len(st.Audiences) == 0 {
		t.Errorf("a service account token for the API: %+v", st)
	}
	vault := token("vault")
	if st := review(vault, "vault", "other"); !st.Authenticated || !slices.Equal(st.Audiences, []string{"vault"}) {
		t.Errorf("a token for vault, reviewed for vault and other: %+v", st)
	}
	if st := review(vault); st.Authenticated || !strings.Contains(st.Error, "audiences") {
		t.Errorf("a token for vault, reviewed for the API: %+v", st)
	}
	if st := review("not-a-token-of-ours"); st.Authenticated || st.User.Username != "" {
		t.Errorf("an unknown token: %+v", st)
	}
	_, err := c.client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{}, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "token is required") {
		t.Errorf("a review without a token: %v", err)
	}
}
