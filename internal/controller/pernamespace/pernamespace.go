// Package pernamespace is what the controllers that keep one object of a given name in
// every active namespace share (serviceaccount's "default" ServiceAccount,
// rootcacertpublisher's "kube-root-ca.crt" ConfigMap): a queue of namespace names, fed by
// the namespaces added or updated and by the changes of that object, and the check that a
// namespace is still active.
package pernamespace

import (
	"context"
	"log/slog"

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

// Base is such a controller's client, namespace lister, queue and log.
type Base struct {
	Client     kubernetes.Interface
	Namespaces corelisters.NamespaceLister
	Log        *slog.Logger
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
}

// New wires a Base named queueName (in the workqueue metrics) to the shared Namespace
// informer and to objects, the informer of the kind the controller keeps: handlers says
// which of its events ask for a look, with on, the handler that queues the namespace of
// the object called name.
func New(queueName string, client kubernetes.Interface, namespaces coreinformers.NamespaceInformer, objects cache.SharedIndexInformer,
	name string, handlers func(on func(obj any)) cache.ResourceEventHandlerFuncs, log *slog.Logger) (*Base, error) {
	b := &Base{Client: client, Namespaces: namespaces.Lister(), Log: log,
		synced: []cache.InformerSynced{namespaces.Informer().HasSynced, objects.HasSynced},
		queue:  workloop.NewQueue[string](queueName)}
	if _, err := namespaces.Informer().AddEventHandler(workloop.OnAddOrUpdate(workloop.Enqueue(b.queue))); err != nil {
		return nil, err
	}
	_, err := objects.AddEventHandler(handlers(func(obj any) {
		if o, ok := workloop.Object[metav1.Object](obj); ok && o.GetName() == name {
			b.queue.Add(o.GetNamespace())
		}
	}))
	return b, err
}

// Work hands the queued namespace names to sync, one at a time, until ctx ends.
func (b *Base) Work(ctx context.Context, sync workloop.SyncFunc[string]) {
	workloop.RunWorkers(ctx, 1, b.queue, b.Log, sync, b.synced...)
}

// Active says whether namespace ns is there and active: a sync has nothing to do in
// another.
func (b *Base) Active(ns string) (bool, error) {
	namespace, err := b.Namespaces.Get(ns)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil && namespace.Status.Phase == corev1.NamespaceActive, err
}

// CreateDone says whether a create that failed with err needs no retry: the object is
// there already, or its namespace is gone or being deleted (kube's controllers skip
// NamespaceTerminatingCause). Any other refusal, such as a quota's 403, is retried.
func CreateDone(err error) bool {
	return apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) ||
		apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}
