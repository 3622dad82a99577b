// Package serviceaccount makes sure every active namespace has a "default" ServiceAccount,
// re-created if deleted, as kube-controller-manager's serviceaccount controller does: pods
// that name no account run as it.
package serviceaccount

import (
	"context"
	"log/slog"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Name is the account every namespace gets.
const Name = "default"

// Controller is the serviceaccount controller.
type Controller struct {
	client     kubernetes.Interface
	namespaces corelisters.NamespaceLister
	accounts   corelisters.ServiceAccountLister
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
	log        *slog.Logger
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, namespaces coreinformers.NamespaceInformer, accounts coreinformers.ServiceAccountInformer, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		client: client, namespaces: namespaces.Lister(), accounts: accounts.Lister(),
		synced: []cache.InformerSynced{namespaces.Informer().HasSynced, accounts.Informer().HasSynced},
		queue:  workloop.NewQueue[string]("serviceaccount"),
		log:    log,
	}
	if _, err := namespaces.Informer().AddEventHandler(workloop.OnAddOrUpdate(workloop.Enqueue(c.queue))); err != nil {
		return nil, err
	}
	_, err := accounts.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if sa, ok := workloop.Object[*corev1.ServiceAccount](obj); ok && sa.Name == Name {
			c.queue.Add(sa.Namespace)
		}
	}})
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
}

func (c *Controller) sync(ctx context.Context, ns string) (time.Duration, error) {
	namespace, err := c.namespaces.Get(ns)
	if apierrors.IsNotFound(err) || (err == nil && namespace.Status.Phase != corev1.NamespaceActive) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if _, err := c.accounts.ServiceAccounts(ns).Get(Name); err == nil {
		return 0, nil
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: ns}}
	_, err = c.client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) || apierrors.IsForbidden(err) { // there already, or the namespace is going
		return 0, nil
	}
	return 0, err
}
