package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/minik8s/minik8s/internal/bootstraptoken"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"
	bootstraptokens "k8s.io/cluster-bootstrap/util/tokens"
)

// BootstrapTokens authenticates bootstrap tokens (`<id>.<secret>`), as kube-apiserver's
// --enable-bootstrap-token-auth does: the Secret kube-system/bootstrap-token-<id> of type
// bootstrap.kubernetes.io/token must hold the same token-id and token-secret, be marked
// usage-bootstrap-authentication=true and not be expired. The user is
// system:bootstrap:<id> in system:bootstrappers and the Secret's auth-extra-groups.
type BootstrapTokens struct {
	secrets corelisters.SecretNamespaceLister
	synced  cache.InformerSynced
	start   func(stop <-chan struct{})
	now     func() time.Time
}

// NewBootstrapTokens reads the bootstrap token Secrets of kube-system through an informer
// of client (only that namespace and that type are cached, not every Secret).
func NewBootstrapTokens(client kubernetes.Interface) *BootstrapTokens {
	inf, start := bootstraptoken.NewInformer(client)
	return &BootstrapTokens{secrets: inf.Lister().Secrets(metav1.NamespaceSystem), synced: inf.Informer().HasSynced,
		start: start, now: time.Now}
}

// Start runs the informer until ctx ends and waits for its cache.
func (b *BootstrapTokens) Start(ctx context.Context) error {
	b.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), b.synced) {
		return errors.New("bootstrap token cache did not sync")
	}
	return nil
}

// Authenticate is an authn.TokenAuthenticator: a token not of the bootstrap form, or
// with no Secret, is not recognised; one whose Secret refuses it is an error.
func (b *BootstrapTokens) Authenticate(_ context.Context, token string) (authn.User, bool, error) {
	id, secret, err := bootstraptokens.ParseToken(token)
	if err != nil {
		return authn.User{}, false, nil
	}
	s, err := b.secrets.Get(bootstrapapi.BootstrapTokenSecretPrefix + id)
	if apierrors.IsNotFound(err) {
		return authn.User{}, false, nil
	}
	if err != nil {
		return authn.User{}, false, err
	}
	return userOfBootstrapSecret(s, id, secret, b.now())
}

// userOfBootstrapSecret checks a token against its Secret in kube-apiserver's order.
func userOfBootstrapSecret(s *corev1.Secret, id, secret string, now time.Time) (authn.User, bool, error) {
	refuse := func(format string, a ...any) (authn.User, bool, error) {
		return authn.User{}, false, fmt.Errorf("bootstrap secret %s/%s matching bearer token "+format, append([]any{s.Namespace, s.Name}, a...)...)
	}
	if s.DeletionTimestamp != nil {
		return refuse("is deleted and awaiting removal")
	}
	if s.Type != bootstrapapi.SecretTypeBootstrapToken || s.Data == nil {
		return refuse("has invalid type, expected %s", bootstrapapi.SecretTypeBootstrapToken)
	}
	stored := bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenSecretKey)
	if subtle.ConstantTimeCompare([]byte(stored), []byte(secret)) != 1 {
		return refuse("has invalid value for key %s", bootstrapapi.BootstrapTokenSecretKey)
	}
	if got := bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenIDKey); got != id {
		return refuse("has invalid value for key %s, expected %s", bootstrapapi.BootstrapTokenIDKey, id)
	}
	if bootstrapsecrets.HasExpired(s, now) {
		return refuse("has expired (%s %q)", bootstrapapi.BootstrapTokenExpirationKey, bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenExpirationKey))
	}
	if bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenUsageAuthentication) != "true" {
		return refuse("not marked %s=true", bootstrapapi.BootstrapTokenUsageAuthentication)
	}
	groups, err := bootstrapsecrets.GetGroups(s)
	if err != nil {
		return refuse("has invalid value for key %s: %v", bootstrapapi.BootstrapTokenExtraGroupsKey, err)
	}
	return authn.User{Name: bootstrapapi.BootstrapUserPrefix + id, Groups: groups}, true, nil
}
