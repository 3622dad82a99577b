package generic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/utils/ptr"
)

// Delete removes an object the Kubernetes way: preconditions first, then admission; a
// graceful kind (a running pod) or an object with finalizers is only marked with
// deletionTimestamp, and goes away when its grace period is cut to zero and its finalizers
// are gone. removed tells an object gone (for a dry run, one that would be) from one
// that is still there, marked.
func (s *Store) Delete(ctx context.Context, res *registry.Resource, ns, name string, opts metav1.DeleteOptions) (obj runtime.Object, removed bool, err error) {
	if refuse := res.Rules.RefuseDelete; refuse != nil {
		if err := refuse(name); err != nil {
			return nil, false, err
		}
	}
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
func (s *Store) delete(ctx context.Context, res *registry.Resource, ns, name string, opts metav1.DeleteOptions, admit bool) (_ runtime.Object, removed bool, _ error) {
	dry := len(opts.DryRun) > 0
	key := Key(res, ns, name)
	var marked runtime.Object // as this request stored it, marked to go at once
	goes := false             // marked so, or nothing to mark: delete whatever is there now
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		obj, kv, err := s.current(ctx, res, name, key)
		if marked != nil && apierrors.IsNotFound(err) {
			return marked, true, nil // someone else completed the deletion
		}
		if err != nil {
			return nil, false, err
		}
		if err := deletePreconditions(res, obj, opts.Preconditions); err != nil {
			return nil, false, err
		}
		// Asked again while the kind's own finalizers hold it, it is returned as it is, as
		// kube's namespace storage does (a 409 until Kubernetes 1.17).
		if MustMeta(obj).GetDeletionTimestamp() != nil && res.Rules.Finalizing != nil && res.Rules.Finalizing(obj) {
			return obj, false, nil
		}
		mark := false
		if !goes {
			marking := obj.DeepCopyObject()
			graceful, pending := beforeDelete(res, marking, opts.GracePeriodSeconds)
			if pending { // left as it is, unadmitted, as kube's store leaves it
				return obj, false, nil
			}
			_, gcChanged := collectorFinalizers(res, MustMeta(marking), opts)
			mark = graceful || gcChanged || finalizing(res, obj) || marksDeleted(res, obj)
		}
		// Admitted for the mark and again for the removal, as kube's deleteValidation is.
		if err := s.admitDelete(ctx, res, obj, admit, dry); err != nil {
			return nil, false, err
		}
		if mark {
			out, now, err := s.markForDeletion(ctx, res, ns, name, opts, dry)
			if err != nil || !now || dry && out != nil {
				return out, now && err == nil, err
			}
			// Nothing holds it: it goes now, the version this request stored being the one
			// its precondition meant.
			marked, goes = out, true
			if pre := opts.Preconditions; pre != nil && pre.ResourceVersion != nil && out != nil {
				opts.Preconditions = &metav1.Preconditions{UID: pre.UID, ResourceVersion: ptr.To(MustMeta(out).GetResourceVersion())}
			}
			continue
		}
		if dry {
			return obj, true, nil
		}
		_, _, err = s.store.Delete(ctx, key, kv.Revision)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err == nil {
			s.release(ctx, res, nil, obj, false)
		}
		return obj, err == nil, err
	}
	return nil, false, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("too many concurrent writers, gave up after %d attempts", maxUpdateAttempts))
}

// admitDelete runs admission on the deletion of obj, unless the caller admitted the write
// it is part of (an eviction).
func (s *Store) admitDelete(ctx context.Context, res *registry.Resource, obj runtime.Object, admit, dry bool) error {
	if !admit {
		return nil
	}
	m := MustMeta(obj)
	attrs := &Attributes{Operation: Delete, Resource: res, Namespace: m.GetNamespace(), Name: m.GetName(), OldObject: obj, DryRun: dry}
	if err := s.admission.admit(ctx, attrs); err != nil {
		return err
	}
	return s.admission.validate(ctx, attrs)
}

// beforeDelete marks obj for deletion as kube's rest.BeforeDelete does: a graceful kind's
// object gets deletionTimestamp now+grace (and a generation more); one marked already
// may only be hurried, its deletionTimestamp moved back by the grace it loses, never
// before now. graceful: obj was marked and is to be stored so; pending: a graceful
// deletion under way that this request does not hurry, which leaves the object as it is.
// A negative grace period is 1 s.
func beforeDelete(res *registry.Resource, obj runtime.Object, requested *int64) (graceful, pending bool) {
	if requested != nil && *requested < 0 {
		requested = ptr.To[int64](1)
	}
	m := MustMeta(obj)
	if g := m.GetDeletionGracePeriodSeconds(); g != nil && *g < 0 {
		m.SetDeletionGracePeriodSeconds(ptr.To[int64](1))
	}
	if res.Rules.GracefulDelete == nil {
		return false, false
	}
	if ts := m.GetDeletionTimestamp(); ts != nil {
		cur := m.GetDeletionGracePeriodSeconds()
		switch {
		case cur == nil || *cur == 0:
			return false, false // only the removal is left (or failed before)
		case requested == nil || *requested >= *cur:
			return false, true
		}
		period := *requested
		at := metav1.NewTime(ts.Add(time.Duration(period-*cur) * time.Second))
		if now := metav1.Now(); at.Before(&now) {
			at = now
			if period != 0 {
				period = 1 // its grace is over, but the request asked for a graceful deletion
			}
		}
		m.SetDeletionTimestamp(&at)
		m.SetDeletionGracePeriodSeconds(&period)
		return true, false
	}
	grace, ok := res.Rules.GracefulDelete(obj, requested)
	if !ok {
		return false, false
	}
	at := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second))
	m.SetDeletionTimestamp(&at)
	m.SetDeletionGracePeriodSeconds(&grace)
	return true, false
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
		out, _, err := s.delete(ctx, res, m.GetNamespace(), m.GetName(), opts, true)
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

// markForDeletion stores the object marked for deletion (beforeDelete) with the garbage
// collector's finalizers as the options ask, leaving the rest of the deletion to the node
// agent, the finalizers' owners or the garbage collector; a kind without graceful deletion
// is marked only while finalizers hold it. now: the object is to be removed at once
// (marked with no grace and nothing holding it, or not graceful and held by nothing).
func (s *Store) markForDeletion(ctx context.Context, res *registry.Resource, ns, name string, opts metav1.DeleteOptions, dry bool) (out runtime.Object, now bool, err error) {
	out, err = s.Update(ctx, res, ns, name, UpdateOptions{DryRun: dry, deleting: true, admitted: true}, func(cur runtime.Object) (runtime.Object, error) {
		if err := deletePreconditions(res, cur, opts.Preconditions); err != nil {
			return nil, err
		}
		first := MustMeta(cur).GetDeletionTimestamp() == nil
		graceful, pending := beforeDelete(res, cur, opts.GracePeriodSeconds)
		if pending {
			return cur, nil
		}
		m := MustMeta(cur)
		if marksDeleted(res, cur) {
			// As apiextensions-apiserver's CRD Delete: the first deletion only marks the
			// object, with no grace period and no garbage collector finalizer.
			res.Rules.MarkDeleted(cur)
			now := metav1.Now()
			m.SetDeletionTimestamp(&now)
			return cur, nil
		}
		if finalizers, changed := collectorFinalizers(res, m, opts); changed {
			m.SetFinalizers(finalizers)
		}
		if !graceful {
			if !finalizing(res, cur) {
				return nil, errDeleteNow
			}
			markDeleting(cur)
		}
		if first && res.Rules.Deleting != nil {
			res.Rules.Deleting(cur)
		}
		return cur, nil
	})
	if errors.Is(err, errDeleteNow) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return out, finalized(res, out), nil
}

// marksDeleted tells whether the kind's MarkDeleted is due: obj is not marked yet.
func marksDeleted(res *registry.Resource, obj runtime.Object) bool {
	return res.Rules.MarkDeleted != nil && MustMeta(obj).GetDeletionTimestamp() == nil
}

// errDeleteNow tells markForDeletion that there is nothing to mark: the object just goes.
var errDeleteNow = errors.New("delete now")

// collectorFinalizers are the object's finalizers with the garbage collector's set as
// kube-apiserver's store sets them on every deletion: orphan or foregroundDeletion as the
// request's orphanDependents or propagation policy asks (Background asks for neither),
// else as the object already has, else orphan for a kind that orphans by default. A kind the
// collector leaves alone keeps them; changed says whether they differ from the object's.
func collectorFinalizers(res *registry.Resource, m metav1.Object, opts metav1.DeleteOptions) (finalizers []string, changed bool) {
	cur := m.GetFinalizers()
	if res.Rules.NotCollected {
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

// preconditionFailure says how obj fails the preconditions, in kube's storage words; ""
// when it meets them.
func preconditionFailure(obj runtime.Object, pre *metav1.Preconditions) string {
	if pre == nil {
		return ""
	}
	m := MustMeta(obj)
	if pre.UID != nil && *pre.UID != m.GetUID() {
		return fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, m.GetUID())
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != m.GetResourceVersion() {
		return fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, m.GetResourceVersion())
	}
	return ""
}

// deletePreconditions checks a deletion's preconditions as kube does: in rest.BeforeDelete's
// words, which name the kind (Pod, Deployment.apps), except for the kinds with a Delete of
// their own (namespaces, CRDs), which check first in their REST layer's words.
func deletePreconditions(res *registry.Resource, obj runtime.Object, pre *metav1.Preconditions) error {
	m := MustMeta(obj)
	if pre == nil || res.Rules.Finalizing != nil || res.Rules.MarkDeleted != nil {
		if msg := preconditionFailure(obj, pre); msg != "" {
			return apierrors.NewConflict(res.GroupResource(), m.GetName(), errors.New(msg))
		}
		return nil
	}
	kind := schema.GroupResource{Group: res.Group, Resource: res.Kind}
	if pre.UID != nil && *pre.UID != m.GetUID() {
		return apierrors.NewConflict(kind, m.GetName(), fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *pre.UID, m.GetUID()))
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(kind, m.GetName(), fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *pre.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}
