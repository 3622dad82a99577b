// Package resourcequota keeps ResourceQuotas' status.hard and status.used, as
// kube-controller-manager's resource quota controller does: object counts (pods, services,
// configmaps, ..., count/<resource>.<group>) and the compute resources of pods, recomputed
// when objects are updated or deleted, and periodically (pkg/control/quota evaluates). The
// ResourceQuota admission plugin charges each new object as it is created.
package resourcequota

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/minik8s/minik8s/internal/controller/trim"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	"github.com/minik8s/minik8s/pkg/control/quota"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Name is the controller's name.
const Name = "resourcequota-controller"

// ResyncPeriod is how often every quota is recomputed from scratch, as
// kube-controller-manager's --resource-quota-sync-period (5m) does.
const ResyncPeriod = 5 * time.Minute

// Controller computes ResourceQuota status.
type Controller struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	// metadata watches the resources the typed factory has no informer for (custom
	// resources, aggregated APIs): counting needs no more than their metadata.
	metadata metadatainformer.SharedInformerFactory
	quotas   corelisters.ResourceQuotaLister
	synced   cache.InformerSynced
	mapper   meta.RESTMapper
	queue    workqueue.TypedRateLimitingInterface[string]
	log      *slog.Logger

	// monitors are the shared informers of the resources some quota counts, started on
	// first need as kube-controller-manager's quota monitor does.
	mu       sync.Mutex
	monitors map[schema.GroupVersionResource]cache.SharedIndexInformer
	stop     <-chan struct{}
}

// New wires the controller to the shared informer factory: quotas now, the informers of
// the resources quotas name when a quota first names them (through md for resources
// without a typed informer).
func New(client kubernetes.Interface, md metadata.Interface, mapper meta.RESTMapper, factory informers.SharedInformerFactory, log *slog.Logger) (*Controller, error) {
	quotas := factory.Core().V1().ResourceQuotas()
	c := &Controller{
		client: client, factory: factory, quotas: quotas.Lister(), synced: quotas.Informer().HasSynced,
		metadata: metadatainformer.NewSharedInformerFactoryWithOptions(md, 0, metadatainformer.WithTransform(trim.ManagedFields)),
		mapper:   mapper,
		queue:    workloop.NewQueue[string]("resourcequota"),
		log:      log,
		monitors: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
	}
	_, err := quotas.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(old, obj any) {
			// Our own status writes come back as updates: only a spec change needs a look.
			if o, n := old.(*corev1.ResourceQuota), obj.(*corev1.ResourceQuota); !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) || !apiequality.Semantic.DeepEqual(n.Spec.Hard, n.Status.Hard) {
				c.enqueue(obj)
			}
		},
	})
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.stop = ctx.Done()
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced)
}

func (c *Controller) enqueue(obj any) { workloop.Enqueue(c.queue)(obj) }

// monitor is the shared informer of a resource, started and synced on first use.
func (c *Controller) monitor(gr schema.GroupResource) (cache.SharedIndexInformer, error) {
	gvr, err := c.mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		return nil, fmt.Errorf("resource %s: %w", gr, err)
	}
	c.mu.Lock()
	inf, ok := c.monitors[gvr]
	if !ok {
		if typed, err := c.factory.ForResource(gvr); err == nil {
			inf = typed.Informer()
		} else {
			inf = c.metadata.ForResource(gvr).Informer()
		}
		objectChanged := workloop.EnqueueNamespace(c.queue, c.quotas.ResourceQuotas) // wakes the quotas of the object's namespace
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			// Not on adds, nor on updates that change no usage: ResourceQuota admission
			// charged new objects already, and a recount from this informer, which may not
			// yet hold objects admitted a moment ago, would undo those charges and let
			// creates past the quota (admission's own charge, an update of the quota, woke
			// such a recount). Usage-changing updates and deletes release usage
			// (replenishment, as kube-controller-manager's).
			UpdateFunc: func(old, obj any) {
				if quota.UpdateChangesUsage(old, obj) {
					objectChanged(obj)
				}
			},
			DeleteFunc: objectChanged,
		}); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		c.monitors[gvr] = inf
		c.factory.Start(c.stop) // start only the informers not yet running
		c.metadata.Start(c.stop)
	}
	c.mu.Unlock()
	if !cache.WaitForCacheSync(c.stop, inf.HasSynced) {
		return nil, fmt.Errorf("informer of %s did not sync", gr)
	}
	return inf, nil
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	shared, found, err := workloop.Lookup(key, c.quotas.ResourceQuotas)
	if !found {
		return 0, err
	}
	q := shared.DeepCopy()
	reqs := quota.ScopeRequirements(q)
	matches := func(p *corev1.Pod) bool { return quota.PodMatches(reqs, p) }
	used := corev1.ResourceList{}
	for rn := range q.Spec.Hard {
		gr, ok := quota.ResourceOf(rn)
		if !ok || (len(reqs) > 0 && gr != (schema.GroupResource{Resource: "pods"})) {
			continue // not computed here, or a resource pod scopes do not apply to
		}
		inf, err := c.monitor(gr)
		if err != nil {
			c.log.Info("quota names a resource it cannot count", "quota", key, "resource", rn, "err", err)
			continue
		}
		objs, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, shared.Namespace)
		if err != nil {
			return 0, err
		}
		used[rn] = quota.Usage(rn, gr, objs, matches)
	}
	q.Status.Hard = q.Spec.Hard.DeepCopy()
	q.Status.Used = used
	if !apiequality.Semantic.DeepEqual(shared.Status, q.Status) {
		if _, err := c.client.CoreV1().ResourceQuotas(shared.Namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("update status of resourcequota %s: %w", key, err)
		}
	}
	return ResyncPeriod, nil
}
