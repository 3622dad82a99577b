// Package garbagecollector deletes objects whose owners are gone, as Kubernetes' garbage
// collector does with ownerReferences: Background deletion removes the owner at once and the
// collector then deletes its dependents; Foreground (finalizer foregroundDeletion) deletes
// the dependents first and the owner once no dependent blocks it (blockOwnerDeletion);
// Orphan (finalizer orphan) strips the owner reference from the dependents and keeps them.
// A dependent that still has a valid owner is kept and loses only its references to owners
// gone or being deleted in the foreground. Like Kubernetes' collector it reads and writes
// only metadata, whatever the kind: through metadata informers (PartialObjectMetadata), or
// through the typed informers other components of the process already run. It reads the
// server's resources every 30 s, so it watches those of CRDs created since it started; an
// owner of a kind it does not know keeps its dependents.
package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minik8s/minik8s/internal/controller/discovered"
	"github.com/minik8s/minik8s/internal/controller/trim"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	corev1 "k8s.io/api/core/v1"
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
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// Collector is the garbage collector.
type Collector struct {
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	mapper    atomic.Pointer[meta.RESTMapper] // as of the last discovery
	shared    map[schema.GroupVersionResource]cache.SharedIndexInformer
	graph     *graph
	queue     workqueue.TypedRateLimitingInterface[types.UID]
	recorder  record.EventRecorder
	log       *slog.Logger

	monitors map[schema.GroupVersionResource]*monitor // the resources watched; Run's alone
	running  sync.WaitGroup                           // the informers started here
}

// monitor is the watch on one resource: the handler on a shared informer, or an informer of
// the collector's own, stopped by stop.
type monitor struct {
	informer     cache.SharedIndexInformer
	registration cache.ResourceEventHandlerRegistration
	stop         context.CancelFunc // nil for a shared informer
}

// resyncPeriod is how often the collector reads the server's resources again, to watch those
// of CRDs and aggregated APIs that came and stop watching those that went, as
// kube-controller-manager's collector syncs every 30 s.
const resyncPeriod = 30 * time.Second

// New makes a collector; Run starts its informers. shared are typed informers that other
// components run (and start) anyway: the collector watches those resources through them
// rather than through a second watch and cache of its own, as kube-controller-manager's
// collector uses the shared typed informers where they exist.
func New(md metadata.Interface, disc discovery.DiscoveryInterface, shared map[schema.GroupVersionResource]cache.SharedIndexInformer, recorder record.EventRecorder, log *slog.Logger) *Collector {
	return &Collector{
		metadata: md, discovery: disc, shared: shared, recorder: recorder, log: log, graph: newGraph(),
		queue: workloop.NewQueue[types.UID](""), monitors: map[schema.GroupVersionResource]*monitor{},
	}
}

// Run watches every resource that can be listed, watched and deleted, and collects garbage
// until ctx ends.
func (c *Collector) Run(ctx context.Context) error {
	defer c.queue.ShutDown() // also when ctx ends before the caches fill
	defer c.running.Wait()
	ctx, stop := context.WithCancel(ctx) // the informers' too, whatever ends Run
	defer stop()
	defer utilruntime.HandleCrash()
	resources, err := c.discover(ctx)
	if err != nil {
		return err
	}
	if err := c.watch(ctx, resources); err != nil {
		return err
	}
	c.log.Info("garbage collector started", "resources", len(resources))
	c.running.Add(1)
	go func() {
		defer c.running.Done()
		wait.UntilWithContext(ctx, c.resync, resyncPeriod)
	}()
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
		var err error
		if resources, err = c.discoverOnce(); err != nil {
			c.log.Warn("garbage collector discovery failed; retrying", "err", err)
			return false, nil
		}
		return true, nil
	})
	return resources, err
}

// discoverOnce reads the server's resources and their kinds. Groups that failed to answer
// (an aggregated API down) keep the resources watched before, as kube's collector keeps them.
func (c *Collector) discoverOnce() ([]schema.GroupVersionResource, error) {
	groups, err := restmapper.GetAPIGroupResources(c.discovery)
	if groups == nil {
		return nil, fmt.Errorf("garbage collector discovery: %w", err)
	}
	lists, err := c.discovery.ServerPreferredResources()
	if len(lists) == 0 {
		return nil, fmt.Errorf("garbage collector discovery: %w", err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	c.mapper.Store(&mapper)
	resources := slices.DeleteFunc(discovered.Supporting(lists, "list", "watch", "delete"), func(gvr schema.GroupVersionResource) bool {
		return ignoredResources[gvr.GroupResource()]
	})
	if failed, partial := discovery.GroupDiscoveryFailedErrorGroups(err); partial {
		for gvr := range c.monitors {
			if _, ok := failed[gvr.GroupVersion()]; ok && !slices.Contains(resources, gvr) {
				resources = append(resources, gvr)
			}
		}
	}
	return resources, nil
}

// resync reads the server's resources again and watches them as they are now; when
// resources came, the objects whose owners the graph has not seen are looked at again: an
// owner of a kind unknown until now may be gone, which no event of its will tell.
func (c *Collector) resync(ctx context.Context) {
	resources, err := c.discoverOnce()
	if err != nil {
		c.log.Warn("garbage collector discovery failed; keeping the resources watched", "err", err)
		return
	}
	added := slices.ContainsFunc(resources, func(gvr schema.GroupVersionResource) bool { return c.monitors[gvr] == nil })
	if err := c.watch(ctx, resources); err != nil {
		c.log.Warn("garbage collector could not watch the resources discovered", "err", err)
		return
	}
	if added {
		for _, uid := range c.graph.withUnseenOwners() {
			c.queue.Add(uid)
		}
	}
}

// watch starts watching the resources not watched yet, stops watching those no longer
// served, and waits until the new watches have listed every object.
func (c *Collector) watch(ctx context.Context, resources []schema.GroupVersionResource) error {
	for gvr, m := range c.monitors {
		if slices.Contains(resources, gvr) {
			continue
		}
		if m.stop != nil {
			m.stop()
		} else if err := m.informer.RemoveEventHandler(m.registration); err != nil {
			return err
		}
		delete(c.monitors, gvr)
		c.log.Info("garbage collector stopped watching a resource no longer served", "resource", gvr)
	}
	var synced []cache.InformerSynced
	for _, gvr := range resources {
		if c.monitors[gvr] != nil {
			continue
		}
		m := &monitor{informer: c.shared[gvr]}
		if m.informer == nil {
			m.informer = metadatainformer.NewFilteredMetadataInformer(c.metadata, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
			if err := m.informer.SetTransform(trim.ManagedFields); err != nil {
				return err
			}
		}
		reg, err := m.informer.AddEventHandler(c.handler(gvr))
		if err != nil {
			return err
		}
		m.registration = reg
		if c.shared[gvr] == nil {
			var informerCtx context.Context
			informerCtx, m.stop = context.WithCancel(ctx)
			c.running.Add(1)
			go func() {
				defer c.running.Done()
				m.informer.RunWithContext(informerCtx)
			}()
		}
		c.monitors[gvr] = m
		synced = append(synced, reg.HasSynced) // its graph has every object, not only the cache
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	return nil
}

// ignoredResources are left alone, as by Kubernetes' collector (its DefaultIgnoredResources):
// Events, many and short-lived, are not owned.
var ignoredResources = map[schema.GroupResource]bool{
	{Resource: "events"}:                         true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

func (c *Collector) handler(gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	upsert := func(obj any) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return
		}
		o := objectFrom(gvr, m)
		old := c.graph.upsert(o)
		// An owner being deleted with a collector finalizer, or a dependent whose owner may
		// already be gone, needs a look.
		if o.deletingDependents() || (o.deleting && o.hasFinalizer(metav1.FinalizerOrphanDependents)) || (!o.deleting && len(o.owners) > 0) {
			c.queue.Add(o.uid)
		}
		c.wakeWaitingOwners(old, o)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, obj any) { upsert(obj) },
		DeleteFunc: func(obj any) {
			m, ok := workloop.Object[metav1.Object](obj)
			if !ok {
				return
			}
			old, deps := c.graph.remove(m.GetUID())
			for _, dep := range deps {
				c.queue.Add(dep)
			}
			c.wakeWaitingOwners(old)
		},
	}
}

// wakeWaitingOwners queues the owners of objs that wait for their dependents: an object
// that goes, or drops or unblocks its reference, may be the last one they wait for.
func (c *Collector) wakeWaitingOwners(objs ...*object) {
	for _, o := range objs {
		if o == nil {
			continue
		}
		for _, ref := range o.owners {
			if owner := c.graph.get(ref.UID); owner != nil && owner.deletingDependents() {
				c.queue.Add(owner.uid)
			}
		}
	}
}

// process handles one object. Events, not polling, bring it back: an owner waiting for its
// dependents is queued again when one of them goes or lets go of it (wakeWaitingOwners).
func (c *Collector) process(ctx context.Context, uid types.UID) (time.Duration, error) {
	o := c.graph.get(uid)
	if o == nil {
		return 0, nil
	}
	switch {
	case o.deleting && o.hasFinalizer(metav1.FinalizerOrphanDependents):
		return 0, c.orphanDependents(ctx, o)
	case o.deletingDependents():
		return 0, c.deleteDependentsFirst(ctx, o)
	case !o.deleting && len(o.owners) > 0:
		if err := c.attemptToDelete(ctx, o); !errors.Is(err, errNamespacedOwnerOfClusterScoped) {
			return 0, err
		}
	}
	return 0, nil // being deleted is a one-way trip: its dependents get their look once it is gone
}

// references sorts an object's owner references, as Kubernetes' classifyReferences does.
type references struct {
	solid    []metav1.OwnerReference // owners that exist and are not being deleted in the foreground
	dangling []metav1.OwnerReference // owners gone
	waiting  []metav1.OwnerReference // owners waiting for their dependents to be deleted
	// elsewhere are the references whose UID is an object of another namespace (so dangling).
	elsewhere []metav1.OwnerReference
}

// errNamespacedOwnerOfClusterScoped: a cluster-scoped object names a namespaced owner, which
// no lookup can find; the collector leaves the object alone, as Kubernetes' does.
var errNamespacedOwnerOfClusterScoped = errors.New("a cluster-scoped object refers to a namespaced owner")

func (c *Collector) classify(ctx context.Context, dep *object, refs []metav1.OwnerReference) (references, error) {
	var r references
	for _, ref := range refs {
		if owner := c.graph.get(ref.UID); owner != nil && owner.namespace != "" && owner.namespace != dep.namespace {
			r.elsewhere = append(r.elsewhere, ref)
		}
	}
	for _, ref := range refs {
		owner, err := c.owner(ctx, ref, dep.namespace)
		switch {
		case err != nil:
			return r, err
		case owner == nil:
			r.dangling = append(r.dangling, ref)
		case owner.deletingDependents():
			r.waiting = append(r.waiting, ref)
		default:
			r.solid = append(r.solid, ref)
		}
	}
	return r, nil
}

// attemptToDelete deletes a dependent none of whose owners stays, as Kubernetes'
// attemptToDeleteItem does: one valid owner keeps it, and it only loses its references to
// the others; an owner waiting in the foreground has it deleted in the foreground too when
// it has dependents of its own.
func (c *Collector) attemptToDelete(ctx context.Context, o *object) error {
	r, err := c.classify(ctx, o, o.owners)
	if errors.Is(err, errNamespacedOwnerOfClusterScoped) {
		// No retry finds such an owner (process drops the error); one the graph has seen
		// elsewhere is told, as kube's graph builder does.
		for _, ref := range r.elsewhere {
			c.reportInvalidNamespace(o, ref)
		}
	}
	if err != nil || len(r.dangling)+len(r.waiting) == 0 {
		return err
	}
	// The graph may lag behind: decide on the object as the server has it now (an owner
	// reference added a moment ago keeps it).
	latest, err := c.metadata.Resource(o.gvr).Namespace(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if latest.UID != o.uid || latest.DeletionTimestamp != nil || len(latest.OwnerReferences) == 0 {
		return nil
	}
	if r, err = c.classify(ctx, o, latest.OwnerReferences); err != nil {
		return err
	}
	for _, ref := range r.elsewhere {
		c.reportInvalidNamespace(o, ref)
	}
	switch {
	case len(r.solid) > 0:
		if len(r.dangling)+len(r.waiting) == 0 {
			return nil
		}
		drop := map[types.UID]bool{}
		for _, ref := range append(r.dangling, r.waiting...) {
			drop[ref.UID] = true
		}
		c.log.Info("removing references to owners gone or being deleted from an object with a valid owner", "resource", o.gvr.Resource, "namespace", o.namespace, "name", o.name)
		return c.patchMetadata(ctx, o, func(m *metav1.ObjectMeta) bool {
			kept := m.OwnerReferences[:0]
			for _, ref := range m.OwnerReferences {
				if !drop[ref.UID] {
					kept = append(kept, ref)
				}
			}
			changed := len(kept) != len(m.OwnerReferences)
			m.OwnerReferences = kept
			return changed
		})
	case len(r.waiting) > 0 && len(c.graph.dependentsOf(o.uid)) > 0:
		if c.hasDependentDeletingDependents(o.uid) {
			// Probably an ownership cycle: were this object to block its owners while it
			// waits for a dependent that waits (through the cycle) for them, none would go.
			if err := c.unblockOwners(ctx, o); err != nil {
				return err
			}
		}
		c.log.Info("deleting in the foreground an object whose owner waits for it", "resource", o.gvr.Resource, "namespace", o.namespace, "name", o.name)
		return c.delete(ctx, o, metav1.DeletePropagationForeground)
	}
	policy := metav1.DeletePropagationBackground
	switch {
	case hasFinalizer(latest.Finalizers, metav1.FinalizerOrphanDependents):
		policy = metav1.DeletePropagationOrphan
	case hasFinalizer(latest.Finalizers, metav1.FinalizerDeleteDependents):
		policy = metav1.DeletePropagationForeground
	}
	c.log.Info("deleting object whose owners are gone or going", "resource", o.gvr.Resource, "namespace", o.namespace, "name", o.name)
	return c.delete(ctx, o, policy)
}

func (c *Collector) hasDependentDeletingDependents(uid types.UID) bool {
	for _, dep := range c.graph.dependentsOf(uid) {
		if d := c.graph.get(dep); d != nil && d.deletingDependents() {
			return true
		}
	}
	return false
}

// unblockOwners sets blockOwnerDeletion to false on every owner reference of the object.
func (c *Collector) unblockOwners(ctx context.Context, o *object) error {
	return c.patchMetadata(ctx, o, func(m *metav1.ObjectMeta) bool {
		changed := false
		for i, ref := range m.OwnerReferences {
			if ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				m.OwnerReferences[i].BlockOwnerDeletion = ptr.To(false)
				changed = true
			}
		}
		return changed
	})
}

// reportInvalidNamespace tells with a Warning Event on the dependent, in Kubernetes' words,
// that its reference names an object of another namespace.
func (c *Collector) reportInvalidNamespace(dep *object, ref metav1.OwnerReference) {
	gvk, err := (*c.mapper.Load()).KindFor(dep.gvr)
	if err != nil {
		return
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	c.recorder.Eventf(&corev1.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: dep.namespace, Name: dep.name, UID: dep.uid},
		corev1.EventTypeWarning, "OwnerRefInvalidNamespace", "ownerRef [%s/%s, namespace: %s, name: %s, uid: %s] does not exist in namespace %q",
		ref.APIVersion, ref.Kind, dep.namespace, ref.Name, ref.UID, dep.namespace)
}

// owner is what the graph or, when the graph has not seen it, the API (the graph may lag
// behind) knows of the owner a reference names in the dependent's namespace (or the
// cluster); nil when it is gone, matching the UID so a re-created namesake does not count,
// and the name and namespace so an object elsewhere with that UID does not either.
func (c *Collector) owner(ctx context.Context, ref metav1.OwnerReference, namespace string) (*object, error) {
	if owner := c.graph.get(ref.UID); owner != nil && owner.name == ref.Name && (owner.namespace == "" || owner.namespace == namespace) {
		return owner, nil
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	mapping, err := (*c.mapper.Load()).RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		// A kind not served (yet: a CRD created since the last discovery, or an API gone
		// in an upgrade) keeps the dependent, retried with back-off, as kube's collector.
		return nil, fmt.Errorf("owner reference to %s, %s: %w", ref.APIVersion, ref.Kind, err)
	}
	switch {
	case mapping.Scope.Name() != meta.RESTScopeNameNamespace:
		namespace = ""
	case namespace == "":
		return nil, errNamespacedOwnerOfClusterScoped
	}
	got, err := c.metadata.Resource(mapping.Resource).Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil || got.UID != ref.UID {
		return nil, err
	}
	return objectFrom(mapping.Resource, got), nil
}

// deleteDependentsFirst has an owner's dependents looked at (deleted, or freed from the
// owner when another owner keeps them) and removes its foregroundDeletion finalizer once
// no dependent blocks it, as Kubernetes' processDeletingDependentsItem does.
func (c *Collector) deleteDependentsFirst(ctx context.Context, o *object) error {
	blocked := false
	for _, uid := range c.graph.dependentsOf(o.uid) {
		d := c.graph.get(uid)
		if d == nil {
			continue
		}
		blocked = blocked || d.blocks(o.uid)
		if !d.deleting {
			c.queue.Add(uid)
		}
	}
	if blocked {
		return nil
	}
	return c.removeFinalizer(ctx, o, metav1.FinalizerDeleteDependents)
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
