package generic

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Delete removes an object the Kubernetes way: preconditions first, then admission; a
// graceful kind (a running pod) or an object with finalizers is only marked with
// deletionTimestamp, and goes away when its grace period is cut to zero and its finalizers
// are gone.
func (s *Store) Delete(ctx context.Context, res *registry.Resource, ns, name string, opts metav1.DeleteOptions) (runtime.Object, error) {
	return s.delete(ctx, res, ns, name, opts, true)
}

// delete is Delete, with the admission of the deletion unless the caller admitted the
// write it is part of (an eviction).
func (s *Store) delete(ctx context.Context, res *registry.Resource, ns, name string, opts metav1.DeleteOptions, admit bool) (runtime.Object, error) {
	dry := len(opts.DryRun) > 0
	key := Key(res, ns, name)
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		obj, kv, err := s.current(ctx, res, name, key)
		if err != nil {
			return nil, err
		}
		if err := checkPreconditions(res, obj, opts.Preconditions); err != nil {
			return nil, err
		}
		if msg := res.Rules.FinalizingConflict; msg != "" && MustMeta(obj).GetDeletionTimestamp() != nil && res.Rules.Finalizing(obj) {
			return nil, apierrors.NewConflict(res.GroupResource(), name, errors.New(msg))
		}
		if admit {
			attrs := &Attributes{Operation: Delete, Resource: res, Namespace: ns, Name: name, OldObject: obj, DryRun: dry}
			if err := s.admission.admit(ctx, attrs); err != nil {
				return nil, err
			}
			if err := s.admission.validate(ctx, attrs); err != nil {
				return nil, err
			}
		}
		grace, graceful := int64(0), false
		if res.Rules.GracefulDelete != nil {
			grace, graceful = res.Rules.GracefulDelete(obj, opts.GracePeriodSeconds)
		}
		gc := propagationFinalizer(opts)
		if graceful || gc != "" || finalizing(res, obj) {
			return s.markForDeletion(ctx, res, ns, name, opts.Preconditions, grace, gc, dry)
		}
		if dry {
			return obj, nil
		}
		_, _, err = s.store.Delete(ctx, key, kv.Revision)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err == nil {
			s.release(ctx, res, nil, obj, false)
		}
		return obj, err
	}
	return nil, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("too many concurrent writers, gave up after %d attempts", maxUpdateAttempts))
}

// DeleteCollection deletes every object of res in ns (all namespaces when empty) that
// matches, and returns what it deleted or marked for deletion.
func (s *Store) DeleteCollection(ctx context.Context, res *registry.Resource, ns string, matches func(runtime.Object) bool, opts metav1.DeleteOptions) ([]runtime.Object, int64, error) {
	kvs, rev, err := s.store.List(ctx, ListPrefix(res, ns))
	if err != nil {
		return nil, 0, err
	}
	var deleted []runtime.Object
	for _, kv := range kvs {
		obj, err := Decode(res, kv.Value, kv.Revision)
		if err != nil {
			return nil, 0, err
		}
		if !matches(obj) {
			continue
		}
		m := MustMeta(obj)
		out, err := s.Delete(ctx, res, m.GetNamespace(), m.GetName(), opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		deleted = append(deleted, out)
	}
	return deleted, rev, nil
}

// markForDeletion sets deletionTimestamp (now+grace) and adds the garbage collector's
// finalizer, if any, leaving the rest of the deletion to the node agent, the finalizers'
// owners or the garbage collector.
func (s *Store) markForDeletion(ctx context.Context, res *registry.Resource, ns, name string, pre *metav1.Preconditions, grace int64, finalizer string, dry bool) (runtime.Object, error) {
	return s.Update(ctx, res, ns, name, UpdateOptions{DryRun: dry, deleting: true, admitted: true}, func(cur runtime.Object) (runtime.Object, error) {
		if err := checkPreconditions(res, cur, pre); err != nil {
			return nil, err
		}
		m := MustMeta(cur)
		if finalizer != "" && !slices.Contains(m.GetFinalizers(), finalizer) {
			m.SetFinalizers(append(m.GetFinalizers(), finalizer))
		}
		markDeleting(cur, grace)
		return cur, nil
	})
}

// propagationFinalizer is the finalizer that makes the garbage collector delete an object's
// dependents first (Foreground) or orphan them (Orphan); Background needs none: the
// collector deletes dependents whose owners are gone.
func propagationFinalizer(opts metav1.DeleteOptions) string {
	switch {
	case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationForeground:
		return metav1.FinalizerDeleteDependents
	case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationOrphan,
		opts.PropagationPolicy == nil && opts.OrphanDependents != nil && *opts.OrphanDependents:
		return metav1.FinalizerOrphanDependents
	}
	return ""
}

func checkPreconditions(res *registry.Resource, obj runtime.Object, pre *metav1.Preconditions) error {
	if pre == nil {
		return nil
	}
	m := MustMeta(obj)
	if pre.UID != nil && *pre.UID != m.GetUID() {
		return apierrors.NewConflict(res.GroupResource(), m.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, m.GetUID()))
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(res.GroupResource(), m.GetName(),
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}
