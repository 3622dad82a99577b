// Package serviceaccounttoken is kube-controller-manager's serviceaccount-token
// controller: it fills every Secret of type kubernetes.io/service-account-token with a
// legacy token for the ServiceAccount its kubernetes.io/service-account.name annotation
// names (with the cluster CA and the namespace beside it, and the account's UID in the
// kubernetes.io/service-account.uid annotation), and deletes such Secrets whose account
// does not exist (or is another one of that name), also when the account is deleted later.
package serviceaccounttoken

import (
	"bytes"
	"context"
	"log/slog"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Name is the controller's name, as kube-controller-manager's.
const Name = "serviceaccount-token-controller"

// Issuer signs the legacy token of Secret secretName for sa.
type Issuer interface {
	IssueLegacy(sa *corev1.ServiceAccount, secretName string) (string, error)
}

// Controller is the token controller.
type Controller struct {
	client   kubernetes.Interface
	issuer   Issuer
	rootCA   []byte
	accounts corelisters.ServiceAccountLister
	secrets  corelisters.SecretLister
	factory  informers.SharedInformerFactory // the token Secrets' own
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string] // secrets' namespace/name
	log      *slog.Logger
}

// New wires the controller: accounts is the shared informer; the token Secrets are watched
// through an informer of their own, of that type only, as kube-controller-manager's (the
// shared one would cache every Secret); rootCA is the ca.crt the Secrets carry.
func New(client kubernetes.Interface, accounts coreinformers.ServiceAccountInformer, issuer Issuer, rootCA []byte, log *slog.Logger) (*Controller, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("type", string(corev1.SecretTypeServiceAccountToken)).String()
	}))
	secrets := factory.Core().V1().Secrets()
	c := &Controller{client: client, issuer: issuer, rootCA: rootCA, accounts: accounts.Lister(), secrets: secrets.Lister(),
		factory: factory, synced: []cache.InformerSynced{accounts.Informer().HasSynced, secrets.Informer().HasSynced},
		queue: workloop.NewQueue[string]("serviceaccount_tokens_secret"), log: log}
	if _, err := secrets.Informer().AddEventHandler(workloop.OnAddOrUpdate(workloop.Enqueue(c.queue))); err != nil {
		return nil, err
	}
	// An account made, replaced or deleted changes what its Secrets should hold.
	if _, err := accounts.Informer().AddEventHandler(workloop.OnEvery(c.enqueueSecretsOf)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run works the queue until ctx ends, then waits for the Secrets' informer to stop.
func (c *Controller) Run(ctx context.Context) {
	c.factory.Start(ctx.Done())
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
	c.factory.Shutdown()
}

func (c *Controller) enqueueSecretsOf(obj any) {
	sa, ok := workloop.Object[*corev1.ServiceAccount](obj)
	if !ok {
		return
	}
	secrets, _ := c.secrets.Secrets(sa.Namespace).List(labels.Everything())
	for _, s := range secrets {
		if s.Annotations[corev1.ServiceAccountNameKey] == sa.Name {
			c.queue.Add(s.Namespace + "/" + s.Name)
		}
	}
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	secret, found, err := workloop.Lookup(key, c.secrets.Secrets)
	if !found || err != nil || secret.Type != corev1.SecretTypeServiceAccountToken || secret.DeletionTimestamp != nil {
		return 0, err
	}
	sa, err := c.account(ctx, secret)
	if err != nil {
		return 0, err
	}
	if sa == nil { // the account is gone, or is another one: so is its token
		err := c.client.CoreV1().Secrets(secret.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &secret.UID}})
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			c.log.Info("deleted the token of a missing service account", "secret", key)
			return 0, nil
		}
		return 0, err
	}
	if !c.updateNeeded(secret) {
		return 0, nil
	}
	// Fill a fresh copy, and only if the cache is not behind it (its event comes next).
	live, err := c.client.CoreV1().Secrets(secret.Namespace).Get(ctx, secret.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if live.ResourceVersion != secret.ResourceVersion || !c.updateNeeded(live) {
		return 0, nil
	}
	if live.Data == nil {
		live.Data = map[string][]byte{}
	}
	if live.Annotations == nil {
		live.Annotations = map[string]string{}
	}
	if len(c.rootCA) > 0 {
		live.Data[corev1.ServiceAccountRootCAKey] = c.rootCA
	}
	live.Data[corev1.ServiceAccountNamespaceKey] = []byte(live.Namespace)
	if len(live.Data[corev1.ServiceAccountTokenKey]) == 0 {
		token, err := c.issuer.IssueLegacy(sa, live.Name)
		if err != nil {
			return 0, err
		}
		live.Data[corev1.ServiceAccountTokenKey] = []byte(token)
	}
	live.Annotations[corev1.ServiceAccountNameKey] = sa.Name
	live.Annotations[corev1.ServiceAccountUIDKey] = string(sa.UID)
	_, err = c.client.CoreV1().Secrets(live.Namespace).Update(ctx, live, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return 0, nil // changed since (its event comes) or gone
	}
	return 0, err
}

// account is the ServiceAccount secret belongs to (looked up in the API when the cache
// has not seen it yet), nil when there is none of that name or it has another UID than
// the Secret's annotation says.
func (c *Controller) account(ctx context.Context, secret *corev1.Secret) (*corev1.ServiceAccount, error) {
	name := secret.Annotations[corev1.ServiceAccountNameKey]
	if name == "" {
		return nil, nil
	}
	sa, err := c.accounts.ServiceAccounts(secret.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		sa, err = c.client.CoreV1().ServiceAccounts(secret.Namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if uid := secret.Annotations[corev1.ServiceAccountUIDKey]; uid != "" && types.UID(uid) != sa.UID {
		return nil, nil
	}
	return sa, nil
}

// updateNeeded: the Secret lacks its CA, namespace or token.
func (c *Controller) updateNeeded(s *corev1.Secret) bool {
	return (len(c.rootCA) > 0 && !bytes.Equal(s.Data[corev1.ServiceAccountRootCAKey], c.rootCA)) ||
		string(s.Data[corev1.ServiceAccountNamespaceKey]) != s.Namespace ||
		len(s.Data[corev1.ServiceAccountTokenKey]) == 0
}
