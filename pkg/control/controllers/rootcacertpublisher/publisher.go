// Package rootcacertpublisher keeps a "kube-root-ca.crt" ConfigMap holding the cluster
// CA in every active namespace, as kube-controller-manager's root-ca-cert-publisher does:
// the ca.crt of every pod's kube-api-access volume comes from it.
package rootcacertpublisher

import (
	"context"
	"log/slog"
	"maps"
	"time"

	"github.com/minik8s/minik8s/internal/controller/pernamespace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Name is the ConfigMap's name, and DataKey its key, as in Kubernetes.
const (
	Name    = "kube-root-ca.crt"
	DataKey = "ca.crt"
)

// Controller is the root-ca-cert-publisher.
type Controller struct {
	*pernamespace.Base
	caPEM      string
	configMaps corelisters.ConfigMapLister
}

// New wires the controller: caPEM is the CA bundle pods trust the API server with.
func New(client kubernetes.Interface, caPEM []byte, namespaces coreinformers.NamespaceInformer, configMaps coreinformers.ConfigMapInformer, log *slog.Logger) (*Controller, error) {
	// A ConfigMap changed or deleted is put back.
	handlers := func(on func(obj any)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) { on(obj) }, DeleteFunc: on}
	}
	b, err := pernamespace.New("root_ca_cert_publisher", client, namespaces, configMaps.Informer(), Name, handlers, log)
	return &Controller{Base: b, caPEM: string(caPEM), configMaps: configMaps.Lister()}, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.Work(ctx, c.sync)
}

func (c *Controller) sync(ctx context.Context, ns string) (time.Duration, error) {
	if active, err := c.Active(ns); !active {
		return 0, err
	}
	cm, err := c.configMaps.ConfigMaps(ns).Get(Name)
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: ns, Annotations: map[string]string{descriptionKey: description}},
			Data:       map[string]string{DataKey: c.caPEM},
		}, metav1.CreateOptions{})
		if pernamespace.CreateDone(err) {
			return 0, nil
		}
		return 0, err
	case err != nil:
		return 0, err
	}
	// As kube's syncNamespace: the data and the description annotation are put back; other
	// annotations and binaryData are not looked at.
	data := map[string]string{DataKey: c.caPEM}
	if maps.Equal(cm.Data, data) && cm.Annotations[descriptionKey] != "" {
		return 0, nil
	}
	fixed := cm.DeepCopy()
	fixed.Data = data
	if fixed.Annotations == nil {
		fixed.Annotations = map[string]string{}
	}
	fixed.Annotations[descriptionKey] = description
	_, err = c.Client.CoreV1().ConfigMaps(ns).Update(ctx, fixed, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return 0, nil // the newer version is queued by its event
	}
	return 0, err
}

const descriptionKey = "kubernetes.io/description"

const description = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
	"No other usage is guaranteed across distributions of Kubernetes clusters."
