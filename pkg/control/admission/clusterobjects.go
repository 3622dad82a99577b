package admission

import (
	"context"
	"errors"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// ClusterObjects reads the cluster-scoped objects of one kind a plugin looks up by name
// (PriorityClasses, RuntimeClasses) from the shared informer, as kube-apiserver's plugins
// read their listers: a pod create costs no store read. One the informer has not seen yet
// (created a moment before) is read from the store before it counts as missing; before
// the informers start (the server's own bootstrap writes) the store answers alone.
type ClusterObjects[T runtime.Object] struct {
	informers *Informers
	informer  cache.SharedIndexInformer
	store     store.Interface
	resource  *registry.Resource // nil: the registry does not serve the kind
}

// NewClusterObjects reads the kind of gvr through the shared informer of inf and through
// st, where reg stores it; the kind is not served when reg or the informer factory lacks it.
func NewClusterObjects[T runtime.Object](inf *Informers, st store.Interface, reg *registry.Registry, gvr schema.GroupVersionResource) *ClusterObjects[T] {
	o := &ClusterObjects[T]{informers: inf, store: st}
	informer, err := inf.Factory.ForResource(gvr)
	if res, ok := reg.Lookup(gvr); ok && err == nil {
		o.informer, o.resource = informer.Informer(), res
	}
	return o
}

// Served says whether the registry serves the kind at all.
func (o *ClusterObjects[T]) Served() bool { return o.resource != nil }

// Get is the named object; false when there is none.
func (o *ClusterObjects[T]) Get(ctx context.Context, a *generic.Attributes, name string) (T, bool, error) {
	var zero T
	cached, err := o.informers.Wait(ctx, a, o.informer.HasSynced)
	if err != nil {
		return zero, false, err
	}
	if cached {
		if obj, ok, err := o.informer.GetStore().GetByKey(name); err == nil && ok {
			return obj.(T), true, nil
		}
	}
	kv, err := o.store.Get(ctx, generic.Key(o.resource, "", name))
	if errors.Is(err, store.ErrNotFound) {
		return zero, false, nil
	}
	if err != nil {
		return zero, false, err
	}
	obj, err := generic.Decode(o.resource, kv.Value, kv.Revision)
	if err != nil {
		return zero, false, err
	}
	return obj.(T), true, nil
}

// List is every object: the informer's, or the store's before the informers start.
func (o *ClusterObjects[T]) List(ctx context.Context, a *generic.Attributes) ([]T, error) {
	cached, err := o.informers.Wait(ctx, a, o.informer.HasSynced)
	if err != nil {
		return nil, err
	}
	if cached {
		items := o.informer.GetStore().List()
		out := make([]T, 0, len(items))
		for _, obj := range items {
			out = append(out, obj.(T))
		}
		return out, nil
	}
	kvs, _, err := o.store.List(ctx, generic.ListPrefix(o.resource, ""))
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(kvs))
	for _, kv := range kvs {
		obj, err := generic.Decode(o.resource, kv.Value, kv.Revision)
		if err != nil {
			return nil, err
		}
		out = append(out, obj.(T))
	}
	return out, nil
}
