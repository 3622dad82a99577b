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
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/warning"
)

// Delete removes an object the Kubernetes way: preconditions first, then admission; a
// graceful kind (a running pod) or an object with finalizers is only marked with
// deletionTimestamp, and goes away when its grace period is cut to zero and its finalizers
// are gone.
func (s *Store) Delete(ctx context.Context, res *registry.Resource, ns, name string, opts metav1.DeleteOptions) (runtime.Object, error) {
	warnOrphaning(ctx, res, opts)
	return s.delete(ctx, res, ns, name, opts, true)
}

// warnOrphaning sends the kind's warning when a deletion that names no policy orphans the
// dependents by default (batch/v1 Jobs'), once per request.
func warnOrphaning(ctx context.Context, res *registry.Resource, opts metav1.DeleteOptions) {
	if msg := res.Rules.OrphanDependentsWarning; msg != "" && opts.PropagationPolicy == nil && opts.OrphanDependents == nil {
		warning.AddWarning(ctx, "", msg)
	}
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
		_, gcChanged := collectorFinalizers(res, MustMeta(obj), opts)
		if graceful || gcChanged || finalizing(res, obj) {
			return s.markForDeletion(ctx, res, ns, name, opts, grace, dry)
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
	warnOrphaning(ctx, res, opts)
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
		out, err := s.delete(ctx, res, m.GetNamespace(), m.GetName(), opts, true)
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

// markForDeletion sets deletionTimestamp (now+grace) and the garbage collector's
// finalizers as the options ask, leaving the rest of the deletion to the node agent, the
// finalizers' owners or the garbage collector; with no finalizer left and no grace the
// update completes the deletion.
func (s *Store) markForDeletion(ctx context.Context, res *registry.Resource, ns, name string, opts metav1.DeleteOptions, grace int64, dry bool) (runtime.Object, error) {
	return s.Update(ctx, res, ns, name, UpdateOptions{DryRun: dry, deleting: true, admitted: true}, func(cur runtime.Object) (runtime.Object, error) {
		if err := checkPreconditions(res, cur, opts.Preconditions); err != nil {
			return nil, err
		}
		m := MustMeta(cur)
		if finalizers, changed := collectorFinalizers(res, m, opts); changed {
			m.SetFinalizers(finalizers)
		}
		markDeleting(cur, grace)
		return cur, nil
	})
}

// collectorFinalizers are the object's finalizers with the garbage collector's set as
// kube-apiserver's store sets them on every deletion: orphan or foregroundDeletion as the
// request's orphanDependents or propagation policy asks (Background asks for neither),
// else as the object already has, else orphan for a kind that orphans by default. A graceful
// deletion under way that the request does not hurry, and a kind the collector leaves alone,
// keep them; changed says whether they differ from the object's.
func collectorFinalizers(res *registry.Resource, m metav1.Object, opts metav1.DeleteOptions) (finalizers []string, changed bool) {
	cur := m.GetFinalizers()
	if g := m.GetDeletionGracePeriodSeconds(); res.Rules.NotCollected || m.GetDeletionTimestamp() != nil && g != nil && *g > 0 &&
		(opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds >= *g) {
		return cur, false
	}
	var orphan, foreground bool
	switch {
	case opts.OrphanDependents != nil:
		orphan = *opts.OrphanDependents
	case opts.PropagationPolicy != nil:
		orphan = *opts.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *opts.PropagationPolicy == metav1.DeletePropagationForeground
	default:
		i := slices.IndexFunc(cur, func(f string) bool {
			return f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents
		})
		switch {
		case i >= 0:
			orphan, foreground = cur[i] == metav1.FinalizerOrphanDependents, cur[i] == metav1.FinalizerDeleteDependents
		default:
			orphan = res.Rules.OrphanDependentsWarning != ""
		}
	}
	for _, f := range cur {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			finalizers = append(finalizers, f)
		}
	}
	if orphan {
		finalizers = append(finalizers, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		finalizers = append(finalizers, metav1.FinalizerDeleteDependents)
	}
	return finalizers, !sets.New(cur...).Equal(sets.New(finalizers...))
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
