// Package tokencleaner deletes bootstrap tokens once they expire, as kube-controller-
// manager's tokencleaner does: the Secrets of type bootstrap.kubernetes.io/token in
// kube-system whose `expiration` has passed (or cannot be parsed) are deleted, each
// looked at again when it is due.
package tokencleaner

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"

	"github.com/minik8s/minik8s/internal/bootstraptoken"
	"github.com/minik8s/minik8s/internal/controller/workloop"
)

// Name is the controller's name, as kube-controller-manager's --controllers knows it.
const Name = "tokencleaner"

// Controller deletes expired bootstrap token Secrets.
type Controller struct {
	client  kubernetes.Interface
	secrets corelisters.SecretNamespaceLister
	synced  cache.InformerSynced
	start   func(stop <-chan struct{})
	queue   workqueue.TypedRateLimitingInterface[string]
	now     func() time.Time
	log     *slog.Logger
}

// New watches kube-system's bootstrap token Secrets only, through an informer of its own.
func New(client kubernetes.Interface, log *slog.Logger) (*Controller, error) {
	inf, start := bootstraptoken.NewInformer(client)
	c := &Controller{client: client, secrets: inf.Lister().Secrets(metav1.NamespaceSystem), synced: inf.Informer().HasSynced,
		start: start, now: time.Now, log: log,
		queue: workloop.NewQueue[string]("token_cleaner")}
	enqueue := func(obj any) {
		if s, ok := obj.(*corev1.Secret); ok {
			c.queue.Add(s.Name)
		}
	}
	if _, err := inf.Informer().AddEventHandler(workloop.OnAddOrUpdate(enqueue)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run cleans until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.start(ctx.Done())
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced)
}

// sync deletes the token if it expired, else asks to be called again when it expires.
func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	secret, found, err := workloop.Found(c.secrets.Get(name))
	if !found {
		return 0, err
	}
	if secret.Type != bootstrapapi.SecretTypeBootstrapToken { // never delete another Secret
		return 0, nil
	}
	ttl, expired := bootstrapsecrets.GetExpiration(secret, c.now())
	if !expired {
		return ttl, nil // 0 (no expiration): nothing to do, ever
	}
	// The UID precondition spares a Secret re-created under the same name meanwhile.
	err = c.client.CoreV1().Secrets(secret.Namespace).Delete(ctx, secret.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &secret.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	c.log.Info("deleted expired bootstrap token", "secret", secret.Namespace+"/"+secret.Name,
		"expiration", bootstrapsecrets.GetData(secret, bootstrapapi.BootstrapTokenExpirationKey))
	return 0, nil
}
