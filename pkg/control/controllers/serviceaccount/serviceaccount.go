// Package serviceaccount makes sure every active namespace has a "default" ServiceAccount,
// re-created if deleted, as kube-controller-manager's serviceaccount controller does: pods
// that name no account run as it.
package serviceaccount

import (
	"context"
	"log/slog"
	"time"

	"github.com/minik8s/minik8s/internal/controller/pernamespace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Name is the account every namespace gets.
const Name = "default"

// Controller is the serviceaccount controller.
type Controller struct {
	*pernamespace.Base
	accounts corelisters.ServiceAccountLister
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, namespaces coreinformers.NamespaceInformer, accounts coreinformers.ServiceAccountInformer, log *slog.Logger) (*Controller, error) {
	// An account deleted is made again.
	handlers := func(on func(obj any)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{DeleteFunc: on}
	}
	b, err := pernamespace.New("serviceaccount", client, namespaces, accounts.Informer(), Name, handlers, log)
	return &Controller{Base: b, accounts: accounts.Lister()}, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.Work(ctx, c.sync)
}

func (c *Controller) sync(ctx context.Context, ns string) (time.Duration, error) {
	if active, err := c.Active(ns); !active {
		return 0, err
	}
	if _, err := c.accounts.ServiceAccounts(ns).Get(Name); err == nil {
		return 0, nil
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: ns}}
	_, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
	if pernamespace.CreateDone(err) {
		return 0, nil
	}
	return 0, err
}
