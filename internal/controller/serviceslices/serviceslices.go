// Package serviceslices is what the two controllers that write the EndpointSlices of
// Services share, endpointslice (Services with a selector) and endpointslicemirroring
// (Services without one, from their Endpoints): a queue of Service keys and the workers
// that work it, the Service and EndpointSlice listers, and the slices one of them
// manages, told apart by their managed-by label.
package serviceslices

import (
	"context"
	"log/slog"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// workers is how many Services a controller syncs at once, as kube-controller-manager's
// --concurrent-service-endpoint-syncs and --mirroring-concurrent-service-endpoint-syncs.
const workers = 5

// Base is such a controller's client, listers, queue and log.
type Base struct {
	Client    kubernetes.Interface
	Services  corelisters.ServiceLister
	Slices    discoverylisters.EndpointSliceLister
	Queue     workqueue.TypedRateLimitingInterface[string]
	Log       *slog.Logger
	managedBy string
	synced    []cache.InformerSynced
}

// New is a Base named queueName (in the workqueue metrics) whose slices carry the
// managed-by label managedBy. Its workers start once the caches of services, slices and
// the controller's other informers have synced; the event handlers are the controller's.
func New(queueName, managedBy string, client kubernetes.Interface, services coreinformers.ServiceInformer,
	slices discoveryinformers.EndpointSliceInformer, log *slog.Logger, others ...cache.SharedIndexInformer) *Base {
	b := &Base{Client: client, Services: services.Lister(), Slices: slices.Lister(), Log: log, managedBy: managedBy,
		Queue:  workloop.NewQueue[string](queueName),
		synced: []cache.InformerSynced{services.Informer().HasSynced, slices.Informer().HasSynced}}
	for _, i := range others {
		b.synced = append(b.synced, i.HasSynced)
	}
	return b
}

// Work hands the queued Service keys to sync until ctx ends.
func (b *Base) Work(ctx context.Context, sync workloop.SyncFunc[string]) {
	workloop.RunWorkers(ctx, workers, b.Queue, b.Log, sync, b.synced...)
}

// Manages says whether s is one of this controller's slices.
func (b *Base) Manages(s *discoveryv1.EndpointSlice) bool {
	return s.Labels[discoveryv1.LabelManagedBy] == b.managedBy
}

// EnqueueService queues the key of the Service s belongs to, if it names one.
func (b *Base) EnqueueService(s *discoveryv1.EndpointSlice) {
	if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
		b.Queue.Add(s.Namespace + "/" + name)
	}
}

// Existing is the slices this controller manages for the Service ns/name.
func (b *Base) Existing(ns, name string) ([]*discoveryv1.EndpointSlice, error) {
	return b.Slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: b.managedBy}))
}

// Delete deletes s; a slice already gone counts as deleted.
func (b *Base) Delete(ctx context.Context, s *discoveryv1.EndpointSlice) error {
	err := b.Client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
