package serviceaccount

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	corev1 "k8s.io/api/core/v1"
	saauth "k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/warning"
)

// Legacy service account tokens are the ones kube-controller-manager's token controller
// writes into Secrets of type kubernetes.io/service-account-token: signed with the same
// key as bound tokens, but with their own issuer, no audience and no expiry; they hold as
// long as their Secret holds them and their account is the one they name.
const (
	LegacyIssuer = "kubernetes/serviceaccount"
	// LastUsedLabelKey is the date (UTC, 2006-01-02) a legacy token last authenticated,
	// kept on its Secret.
	LastUsedLabelKey = "kubernetes.io/legacy-token-last-used"
	// InvalidSinceLabelKey on a Secret refuses its legacy token.
	InvalidSinceLabelKey = "kubernetes.io/legacy-token-invalid-since"
)

// legacyClaims are a legacy token's private claims, as kube's LegacyClaims.
type legacyClaims struct {
	ServiceAccountName string `json:"kubernetes.io/serviceaccount/service-account.name"`
	ServiceAccountUID  string `json:"kubernetes.io/serviceaccount/service-account.uid"`
	SecretName         string `json:"kubernetes.io/serviceaccount/secret.name"`
	Namespace          string `json:"kubernetes.io/serviceaccount/namespace"`
}

// IssueLegacy signs the legacy token of the Secret secretName for sa.
func (t *Tokens) IssueLegacy(sa *corev1.ServiceAccount, secretName string) (string, error) {
	priv := legacyClaims{ServiceAccountName: sa.Name, ServiceAccountUID: string(sa.UID), SecretName: secretName, Namespace: sa.Namespace}
	pub := jwt.Claims{Issuer: LegacyIssuer, Subject: saauth.MakeUsername(sa.Namespace, sa.Name)}
	token, err := jwt.Signed(t.signer).Claims(priv).Claims(pub).Serialize()
	if err != nil {
		return "", fmt.Errorf("sign legacy service account token: %w", err)
	}
	return token, nil
}

// authenticateLegacy checks a legacy token (its signature verified) against its Secret
// and account, with kube-apiserver's legacy validator's checks and wording, and dates its
// Secret's last-used label.
func (t *Tokens) authenticateLegacy(ctx context.Context, token string, pub jwt.Claims, priv legacyClaims) (authn.User, bool, error) {
	switch {
	case pub.Subject == "":
		return authn.User{}, false, errors.New("sub claim is missing")
	case priv.Namespace == "":
		return authn.User{}, false, errors.New("namespace claim is missing")
	case priv.SecretName == "":
		return authn.User{}, false, errors.New("secretName claim is missing")
	case priv.ServiceAccountName == "":
		return authn.User{}, false, errors.New("serviceAccountName claim is missing")
	case priv.ServiceAccountUID == "":
		return authn.User{}, false, errors.New("serviceAccountUID claim is missing")
	}
	ns, name, err := saauth.SplitUsername(pub.Subject)
	if err != nil || ns != priv.Namespace || name != priv.ServiceAccountName {
		return authn.User{}, false, errors.New("sub claim is invalid")
	}
	secret, err := t.objects.Secret(ctx, ns, priv.SecretName)
	if err != nil || secret.DeletionTimestamp != nil {
		return authn.User{}, false, errors.New("Token has been invalidated")
	}
	if subtle.ConstantTimeCompare(secret.Data[corev1.ServiceAccountTokenKey], []byte(token)) == 0 {
		return authn.User{}, false, errors.New("Token does not match server's copy")
	}
	sa, err := t.objects.ServiceAccount(ctx, ns, name)
	switch {
	case err != nil:
		return authn.User{}, false, err
	case sa.DeletionTimestamp != nil:
		return authn.User{}, false, fmt.Errorf("ServiceAccount %s/%s has been deleted", ns, name)
	case string(sa.UID) != priv.ServiceAccountUID:
		return authn.User{}, false, fmt.Errorf("ServiceAccount UID (%s) does not match claim (%s)", sa.UID, priv.ServiceAccountUID)
	}
	t.markUsed(ctx, secret)
	if secret.Labels[InvalidSinceLabelKey] != "" {
		return authn.User{}, false, fmt.Errorf("the token in secret %s/%s for service account %s/%s has been marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or remove the '%s' label from the secret to temporarily allow use of this token",
			ns, secret.Name, ns, name, InvalidSinceLabelKey)
	}
	for _, ref := range sa.Secrets {
		if ref.Name == secret.Name {
			warning.AddWarning(ctx, "", "Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated secret-based tokens.")
			break
		}
	}
	return accountUser(saauth.ServiceAccountInfo{Name: name, Namespace: ns, UID: priv.ServiceAccountUID}), true, nil
}

// markUsed labels secret with today's date unless it says today (or tomorrow: another
// server's clock) already, as kube-apiserver does; a failure is only the label's.
func (t *Tokens) markUsed(ctx context.Context, secret *corev1.Secret) {
	now := t.now().UTC()
	today, tomorrow := now.Format(time.DateOnly), now.AddDate(0, 0, 1).Format(time.DateOnly)
	if last := secret.Labels[LastUsedLabelKey]; last == today || last == tomorrow {
		return
	}
	_ = t.objects.LabelSecret(ctx, secret, LastUsedLabelKey, today)
}
