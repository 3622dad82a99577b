// Package garbagecollector deletes objects whose owners are gone, as Kubernetes' garbage
// collector does with ownerReferences: Background deletion removes the owner at once and the
// collector then deletes its dependents; Foreground (finalizer foregroundDeletion) deletes
// the dependents first and the owner last; Orphan (finalizer orphan) strips the owner
// reference from the dependents and keeps them. Like Kubernetes' collector it reads and writes
// only metadata, whatever the kind: through metadata informers (PartialObjectMetadata), or
// through the typed informers other components of the process already run.
package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/minik8s/minik8s/internal/controller/discovered"
	"github.com/minik8s/minik8s/internal/controller/trim"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// foregroundRetry is how soon an owner waiting for its dependents is looked at again.
const foregroundRetry = time.Second

// Collector is the garbage collector.
type Collector struct {
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	mapper    meta.RESTMapper
	shared    map[schema.GroupVersionResource]cache.SharedIndexInformer
	graph     *graph
	queue     workqueue.TypedRateLimitingInterface[types.UID]
	log       *slog.Logger
}

// New makes a collector; Run starts its informers. shared are typed informers that other
// components run (and start) anyway: the collector watches those resources through them
// rather than through a second watch and cache of its own, as kube-controller-manager's
// collector uses the shared typed informers where they exist.
func New(md metadata.Interface, disc discovery.DiscoveryInterface, shared map[schema.GroupVersionResource]cache.SharedIndexInformer, log *slog.Logger) *Collector {
	return &Collector{
		metadata: md, discovery: disc, shared: shared, log: log, graph: newGraph(),
		queue: workloop.NewQueue[types.UID](""),
	}
}

// Run watches every resource that can be listed, watched and deleted, and collects garbage
// until ctx ends.
func (c *Collector) Run(ctx context.Context) error {
	defer c.queue.ShutDown() // also when ctx ends before the caches fill
	defer utilruntime.HandleCrash()
	resources, err := c.discover(ctx)
	if err != nil {
		return err
	}
	factory := metadatainformer.NewSharedInformerFactoryWithOptions(c.metadata, 0, metadatainformer.WithTransform(trim.ManagedFields))
	var synced []cache.InformerSynced
	for _, gvr := range resources {
		inf, ok := c.shared[gvr]
		if !ok {
			inf = factory.ForResource(gvr).Informer()
		}
		reg, err := inf.AddEventHandler(c.handler(gvr))
		if err != nil {
			return err
		}
		synced = append(synced, reg.HasSynced) // its graph has every object, not only the cache
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	c.log.Info("garbage collector started", "resources", len(resources))
	workloop.Run(ctx, c.queue, c.log, c.process)
	return nil
}

// discover reads the server's resources, retrying with back-off while the server cannot
// answer (it may still be starting, or be restarting): one failed discovery must not leave
// the cluster without a collector, as kube-controller-manager's collector also waits for it.
func (c *Collector) discover(ctx context.Context) ([]schema.GroupVersionResource, error) {
	var resources []schema.GroupVersionResource
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Cap: 10 * time.Second, Steps: math.MaxInt32}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(context.Context) (bool, error) {
		groups, err := restmapper.GetAPIGroupResources(c.discovery)
		if err == nil {
			c.mapper = restmapper.NewDiscoveryRESTMapper(groups)
			resources, err = c.watchable()
		}
		if err != nil {
			c.log.Warn("garbage collector discovery failed; retrying", "err", err)
			return false, nil
		}
		return true, nil
	})
	return resources, err
}

func (c *Collector) watchable() ([]schema.GroupVersionResource, error) {
	lists, err := c.discovery.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("garbage collector discovery: %w", err)
	}
	return discovered.Supporting(lists, "list", "watch", "delete"), nil
}

func (c *Collector) handler(gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	upsert := func(obj any) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return
		}
		o := objectFrom(gvr, m)
		c.graph.upsert(o)
		// An owner being deleted with a collector finalizer, or a dependent whose owner may
		// already be gone, needs a look.
		if (o.deleting && (o.hasFinalizer(metav1.FinalizerDeleteDependents) || o.hasFinalizer(metav1.FinalizerOrphanDependents))) || (!o.deleting && len(o.owners) > 0) {
			c.queue.Add(o.uid)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, obj any) { upsert(obj) },
		DeleteFunc: func(obj any) {
			m, ok := workloop.Object[metav1.Object](obj)
			if !ok {
				return
			}
			for _, dep := range c.graph.remove(m.GetUID()) {
				c.queue.Add(dep)
			}
		},
	}
}

// process handles one object, asking for another look while an owner waits for its dependents.
func (c *Collector) process(ctx context.Context, uid types.UID) (time.Duration, error) {
	o := c.graph.get(uid)
	if o == nil {
		return 0, nil
	}
	switch {
	case o.deleting && o.hasFinalizer(metav1.FinalizerOrphanDependents):
		return 0, c.orphanDependents(ctx, o)
	case o.deleting && o.hasFinalizer(metav1.FinalizerDeleteDependents):
		return c.deleteDependentsFirst(ctx, o)
	case !o.deleting && len(o.owners) > 0:
		return 0, c.deleteIfOrphaned(ctx, o)
	}
	return 0, nil
}

// deleteIfOrphaned deletes a dependent none of whose owners exists any more.
func (c *Collector) deleteIfOrphaned(ctx context.Context, o *object) error {
	for _, ref := range o.owners {
		exists, err := c.ownerExists(ctx, ref, o.namespace)
		if err != nil || exists {
			return err
		}
	}
	c.log.Info("deleting object whose owners are gone", "resource", o.gvr.Resource, "namespace", o.namespace, "name", o.name)
	background := metav1.DeletePropagationBackground
	return c.delete(ctx, o, background)
}

// ownerExists checks the graph and, when the graph has not seen the owner, the API (the
// graph may lag behind), matching the UID so a re-created namesake does not count.
func (c *Collector) ownerExists(ctx context.Context, ref metav1.OwnerReference, namespace string) (bool, error) {
	if owner := c.graph.get(ref.UID); owner != nil {
		return true, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false, nil // an owner reference no API could serve: treat the owner as gone
	}
	mapping, err := c.mapper.RESTMapping(gv.WithKind(ref.Kind).GroupKind(), gv.Version)
	if err != nil {
		return false, nil
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = ""
	}
	got, err := c.metadata.Resource(mapping.Resource).Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return got.UID == ref.UID, nil
}

// deleteDependentsFirst deletes an owner's dependents (foreground, recursively) and removes
// its foregroundDeletion finalizer once none is left.
func (c *Collector) deleteDependentsFirst(ctx context.Context, o *object) (time.Duration, error) {
	deps := c.graph.dependentsOf(o.uid)
	foreground := metav1.DeletePropagationForeground
	for _, uid := range deps {
		if d := c.graph.get(uid); d != nil && !d.deleting {
			if err := c.delete(ctx, d, foreground); err != nil {
				return 0, err
			}
		}
	}
	if len(deps) > 0 {
		return foregroundRetry, nil
	}
	return 0, c.removeFinalizer(ctx, o, metav1.FinalizerDeleteDependents)
}

// orphanDependents strips the owner reference from every dependent, then lets the owner go.
func (c *Collector) orphanDependents(ctx context.Context, o *object) error {
	for _, uid := range c.graph.dependentsOf(o.uid) {
		d := c.graph.get(uid)
		if d == nil {
			continue
		}
		err := c.patchMetadata(ctx, d, func(m *metav1.ObjectMeta) bool {
			kept := m.OwnerReferences[:0]
			for _, r := range m.OwnerReferences {
				if r.UID != o.uid {
					kept = append(kept, r)
				}
			}
			if len(kept) == len(m.OwnerReferences) {
				return false
			}
			m.OwnerReferences = kept
			return true
		})
		if err != nil {
			return err
		}
	}
	return c.removeFinalizer(ctx, o, metav1.FinalizerOrphanDependents)
}

func (c *Collector) removeFinalizer(ctx context.Context, o *object, finalizer string) error {
	return c.patchMetadata(ctx, o, func(m *metav1.ObjectMeta) bool {
		kept := m.Finalizers[:0]
		for _, f := range m.Finalizers {
			if f != finalizer {
				kept = append(kept, f)
			}
		}
		if len(kept) == len(m.Finalizers) {
			return false
		}
		m.Finalizers = kept
		return true
	})
}

// metadataPatch is a merge patch of the owner references and finalizers the collector
// edits, applied only to the resourceVersion they were read at.
type metadataPatch struct {
	Metadata struct {
		ResourceVersion string                  `json:"resourceVersion"`
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		Finalizers      []string                `json:"finalizers"`
	} `json:"metadata"`
}

// patchMetadata reads the object's metadata, lets change edit its owner references or
// finalizers and patches them back, retrying when the object changed in between.
func (c *Collector) patchMetadata(ctx context.Context, o *object, change func(*metav1.ObjectMeta) bool) error {
	client := c.metadata.Resource(o.gvr).Namespace(o.namespace)
	for attempt := 0; attempt < 5; attempt++ {
		m, err := client.Get(ctx, o.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if m.UID != o.uid || !change(&m.ObjectMeta) {
			return nil
		}
		var patch metadataPatch
		patch.Metadata.ResourceVersion = m.ResourceVersion
		patch.Metadata.OwnerReferences, patch.Metadata.Finalizers = m.OwnerReferences, m.Finalizers
		data, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		_, err = client.Patch(ctx, o.name, types.MergePatchType, data, metav1.PatchOptions{})
		if !apierrors.IsConflict(err) {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
	}
	return fmt.Errorf("patch %s %s/%s: too many conflicts", o.gvr.Resource, o.namespace, o.name)
}

func (c *Collector) delete(ctx context.Context, o *object, policy metav1.DeletionPropagation) error {
	uid := o.uid
	err := c.metadata.Resource(o.gvr).Namespace(o.namespace).Delete(ctx, o.name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or a namesake with another UID
	}
	return err
}
