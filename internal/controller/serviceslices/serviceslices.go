// Package serviceslices is what the two controllers that write the EndpointSlices of
// Services share, endpointslice (Services with a selector) and endpointslicemirroring
// (Services without one, from their Endpoints): a queue of Service keys and the workers
// that work it, the Service and EndpointSlice listers, and the slices one of them
// manages, told apart by their managed-by label, and the tracker of the slices it wrote.
package serviceslices

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	corev1 "k8s.io/api/core/v1"
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
	endpointsliceutil "k8s.io/endpointslice/util"
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
	// tracker remembers the generation of every slice this controller wrote or found
	// current, so a sync against a cache that has not seen its writes yet is retried
	// instead of writing a slice twice, and its own writes do not queue a sync again.
	tracker *endpointsliceutil.EndpointSliceTracker
}

// ErrStaleCache retries a sync whose slice cache lags behind this controller's own writes
// (kube's wording).
var ErrStaleCache = errors.New("EndpointSlice informer cache is out of date")

// New is a Base named queueName (in the workqueue metrics) whose slices carry the
// managed-by label managedBy. Its workers start once the caches of services, slices and
// the controller's other informers have synced; the event handlers are the controller's.
func New(queueName, managedBy string, client kubernetes.Interface, services coreinformers.ServiceInformer,
	slices discoveryinformers.EndpointSliceInformer, log *slog.Logger, others ...cache.SharedIndexInformer) *Base {
	b := &Base{Client: client, Services: services.Lister(), Slices: slices.Lister(), Log: log, managedBy: managedBy,
		Queue:   workloop.NewQueue[string](queueName),
		synced:  []cache.InformerSynced{services.Informer().HasSynced, slices.Informer().HasSynced},
		tracker: endpointsliceutil.NewEndpointSliceTracker()}
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

// WatchSlices queues the Service of a managed slice that changed in a way this controller
// did not write, whose service-name label moved, or that someone else deleted (it is put
// back), as kube's endpointslice controllers' slice handlers.
func (b *Base) WatchSlices(slices cache.SharedIndexInformer) error {
	_, err := slices.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if s := obj.(*discoveryv1.EndpointSlice); b.Manages(s) && b.tracker.ShouldSync(s) {
				b.EnqueueService(s)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, cur := oldObj.(*discoveryv1.EndpointSlice), newObj.(*discoveryv1.EndpointSlice)
			switch {
			case old.Labels[discoveryv1.LabelServiceName] != cur.Labels[discoveryv1.LabelServiceName]:
				b.EnqueueService(old)
				b.EnqueueService(cur)
			case b.Manages(old) != b.Manages(cur) || (b.Manages(cur) && b.tracker.ShouldSync(cur)):
				b.EnqueueService(cur)
			}
		},
		DeleteFunc: func(obj any) {
			if s, ok := workloop.Object[*discoveryv1.EndpointSlice](obj); ok && b.Manages(s) && b.tracker.Has(s) && !b.tracker.HandleDeletion(s) {
				b.EnqueueService(s)
			}
		},
	})
	return err
}

// staleReport is the retry of a Service whose slice cache still lags at which the lag is
// reported: with the queue's backoff, about five seconds after the first, where the usual
// lag of an event is milliseconds.
const staleReport = 10

// CheckCache is ErrStaleCache when the slices listed for svc miss or predate a write of
// this controller. A lag that outlasts staleReport retries is logged with the slices as
// the cache and the API server hold them, to tell a slow cache from one that missed an
// event.
func (b *Base) CheckCache(ctx context.Context, svc metav1.Object, existing []*discoveryv1.EndpointSlice) error {
	if !b.tracker.StaleSlices(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: svc.GetNamespace(), Name: svc.GetName()}}, existing) {
		return nil
	}
	key := svc.GetNamespace() + "/" + svc.GetName()
	if b.Queue.NumRequeues(key) == staleReport {
		served, err := b.Client.DiscoveryV1().EndpointSlices(svc.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: b.selector(svc.GetName()).String()})
		var onServer []string
		if err == nil {
			for i := range served.Items {
				onServer = append(onServer, sliceVersion(&served.Items[i]))
			}
		}
		var cached []string
		for _, s := range existing {
			cached = append(cached, sliceVersion(s))
		}
		b.Log.Warn("the EndpointSlice cache still lacks this controller's writes", "service", key, "retries", staleReport,
			"cached", cached, "onServer", onServer, "listErr", err)
	}
	return ErrStaleCache
}

// sliceVersion names a slice's version: name, uid, generation and resourceVersion.
func sliceVersion(s *discoveryv1.EndpointSlice) string {
	return fmt.Sprintf("%s uid=%s generation=%d resourceVersion=%s", s.Name, s.UID, s.Generation, s.ResourceVersion)
}

// Forget drops what the tracker knows of the Service ns/name, once it has no slices to keep.
func (b *Base) Forget(ns, name string) {
	b.tracker.DeleteService(ns, name)
}

// Written records the generation of a slice this controller wrote (the API server's
// answer) or found current, so that its own write's echo does not sync again.
func (b *Base) Written(s *discoveryv1.EndpointSlice) {
	b.tracker.Update(s)
}

// Existing is the slices this controller manages for the Service ns/name.
func (b *Base) Existing(ns, name string) ([]*discoveryv1.EndpointSlice, error) {
	return b.Slices.EndpointSlices(ns).List(b.selector(name))
}

// selector selects the slices this controller manages for the Service name.
func (b *Base) selector(name string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: b.managedBy})
}

// Write creates, updates and deletes the slices of owner (a Service or Endpoints, named
// kind in errors), remembering each write in the tracker. An owner being deleted gets no
// new slice (the garbage collector is deleting them) and a namespace being deleted stops
// the writes, as kube's reconcilers.
func (b *Base) Write(ctx context.Context, owner metav1.Object, kind string, create, update, remove []*discoveryv1.EndpointSlice) error {
	client := b.Client.DiscoveryV1().EndpointSlices(owner.GetNamespace())
	if owner.GetDeletionTimestamp() == nil {
		for _, s := range create {
			created, err := client.Create(ctx, s, metav1.CreateOptions{})
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("failed to create EndpointSlice for %s %s/%s: %w", kind, owner.GetNamespace(), owner.GetName(), err)
			}
			b.Written(created)
		}
	}
	for _, s := range update {
		updated, err := client.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("failed to update %s EndpointSlice for %s %s/%s: %w", s.Name, kind, owner.GetNamespace(), owner.GetName(), err)
		}
		b.Written(updated)
	}
	return b.DeleteSlices(ctx, remove)
}

// DeleteSlices deletes slices, each expected gone by the tracker; a slice already gone
// counts as deleted.
func (b *Base) DeleteSlices(ctx context.Context, slices []*discoveryv1.EndpointSlice) error {
	for _, s := range slices {
		err := b.Client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		b.tracker.ExpectDeletion(s)
	}
	return nil
}
