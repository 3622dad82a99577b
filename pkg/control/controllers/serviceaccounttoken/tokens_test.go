package serviceaccounttoken_test

import (
	"context"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestLegacyTokenSecrets: a Secret of type kubernetes.io/service-account-token is filled
// with a token, the CA and the namespace, and the account's UID annotation; the token
// authenticates as the account (dating the Secret's last-used label) until its Secret or
// account goes; a token Secret naming no account is deleted, as kube-controller-manager's
// token controller does.
func TestLegacyTokenSecrets(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	ctx := context.Background()
	ns := "team"
	cl.CreateNamespace(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	secrets := cl.Client.CoreV1().Secrets(ns)
	sa, err := cl.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tokenSecret := func(name, account string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{corev1.ServiceAccountNameKey: account}},
			Type: corev1.SecretTypeServiceAccountToken}
	}
	for _, s := range []*corev1.Secret{tokenSecret("robot-token", "robot"), tokenSecret("ghost-token", "ghost")} {
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var filled *corev1.Secret
	controllertest.WaitFor(t, "the token Secret filled", 10*time.Second, func() (bool, string) {
		s, err := secrets.Get(ctx, "robot-token", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		filled = s
		return len(s.Data[corev1.ServiceAccountTokenKey]) > 0, ""
	})
	if string(filled.Data[corev1.ServiceAccountNamespaceKey]) != ns || len(filled.Data[corev1.ServiceAccountRootCAKey]) == 0 ||
		filled.Annotations[corev1.ServiceAccountUIDKey] != string(sa.UID) {
		t.Errorf("filled Secret: data keys %v, annotations %v", filled.Data, filled.Annotations)
	}
	controllertest.Until(t, "the Secret of a missing account deleted", 10*time.Second, func() bool {
		_, err := secrets.Get(ctx, "ghost-token", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})

	token := string(filled.Data[corev1.ServiceAccountTokenKey])
	cfg := rest.AnonymousClientConfig(cl.Config)
	cfg.BearerToken = token
	asRobot := kubernetes.NewForConfigOrDie(cfg)
	review, err := asRobot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the legacy token does not authenticate: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != "system:serviceaccount:team:robot" || u.UID != string(sa.UID) {
		t.Errorf("authenticated as %+v", u)
	}
	controllertest.Until(t, "the Secret's last-used label", 10*time.Second, func() bool {
		s, err := secrets.Get(ctx, "robot-token", metav1.GetOptions{})
		return err == nil && s.Labels["kubernetes.io/legacy-token-last-used"] == time.Now().UTC().Format(time.DateOnly)
	})

	// A TokenReview for another audience refuses it, with kube-apiserver's wording.
	tr, err := cl.Client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{"vault"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Status.Authenticated || tr.Status.Error != `token audiences ["https://kubernetes.default.svc.cluster.local"] is invalid for the target audiences ["vault"]` {
		t.Errorf("review for another audience: %+v", tr.Status)
	}

	// The account deleted: so is its token Secret, and the token no longer works.
	if err := cl.Client.CoreV1().ServiceAccounts(ns).Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Until(t, "the token Secret of a deleted account deleted", 10*time.Second, func() bool {
		_, err := secrets.Get(ctx, "robot-token", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	controllertest.Until(t, "the token refused", 10*time.Second, func() bool {
		_, err := asRobot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return apierrors.IsUnauthorized(err)
	})
}
