package apiserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// deleteOptions reads DeleteOptions from the body (kubectl sends one) and the query.
func deleteOptions(r *http.Request) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	body := bufio.NewReader(r.Body)
	if _, err := body.Peek(1); err == nil { // an empty body is no options
		r.Body = io.NopCloser(body)
		if _, err := decodeBody(r, &opts, schema.GroupVersionKind{}, validationIgnore); err != nil {
			return opts, err
		}
	}
	q := r.URL.Query()
	if v := q.Get("gracePeriodSeconds"); v != "" {
		g, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("gracePeriodSeconds must be an integer, not %q", v))
		}
		opts.GracePeriodSeconds = &g
	}
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	if p := opts.PropagationPolicy; p != nil && *p != metav1.DeletePropagationBackground && *p != metav1.DeletePropagationForeground && *p != metav1.DeletePropagationOrphan {
		return opts, apierrors.NewBadRequest(fmt.Sprintf("propagationPolicy must be Background, Foreground or Orphan, not %q", *p))
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	dry, err := dryRun(r)
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return opts, err
}

func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	opts, err := deleteOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	obj, err := s.delete(r.Context(), res, info.Namespace, info.Name, opts)
	if err != nil {
		writeError(w, err)
		return
	}
	s.respond(w, r, res, http.StatusOK, obj)
}

// delete removes an object the Kubernetes way: preconditions first; a graceful kind (a
// running pod) or an object with finalizers is only marked with deletionTimestamp, and goes
// away when its grace period is cut to zero and its finalizers are gone.
func (s *Server) delete(ctx context.Context, res *registry.Resource, ns, name string, opts metav1.DeleteOptions) (runtime.Object, error) {
	dry := len(opts.DryRun) > 0
	key := objectKey(res, ns, name)
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		obj, kv, err := s.current(ctx, res, name, key)
		if err != nil {
			return nil, err
		}
		if err := checkPreconditions(res, obj, opts.Preconditions); err != nil {
			return nil, err
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

// markForDeletion sets deletionTimestamp (now+grace) and adds the garbage collector's
// finalizer, if any, leaving the rest of the deletion to the node agent, the finalizers'
// owners or the garbage collector.
func (s *Server) markForDeletion(ctx context.Context, res *registry.Resource, ns, name string, pre *metav1.Preconditions, grace int64, finalizer string, dry bool) (runtime.Object, error) {
	return s.update(ctx, res, ns, name, updateOptions{dryRun: dry, deleting: true}, func(cur runtime.Object) (runtime.Object, error) {
		if err := checkPreconditions(res, cur, pre); err != nil {
			return nil, err
		}
		m := mustMeta(cur)
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
	m := mustMeta(obj)
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

func (s *Server) serveDeleteCollection(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	opts, err := deleteOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	sel, err := parseSelectors(r, res)
	if err != nil {
		writeError(w, err)
		return
	}
	kvs, rev, err := s.store.List(r.Context(), listPrefix(res, info.Namespace))
	if err != nil {
		writeError(w, err)
		return
	}
	var deleted []runtime.Object
	for _, kv := range kvs {
		obj, err := decodeStored(res, kv.Value, kv.Revision)
		if err != nil {
			writeError(w, err)
			return
		}
		if !sel.matches(res, obj) {
			continue
		}
		m := mustMeta(obj)
		out, err := s.delete(r.Context(), res, m.GetNamespace(), m.GetName(), opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			writeError(w, err)
			return
		}
		deleted = append(deleted, out)
	}
	list, err := res.NewList()
	if err == nil {
		err = meta.SetList(list, deleted)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	lm, _ := meta.ListAccessor(list)
	lm.SetResourceVersion(strconv.FormatInt(rev, 10))
	list.GetObjectKind().SetGroupVersionKind(res.GroupVersion().WithKind(res.Kind + "List"))
	writeJSON(w, http.StatusOK, list)
}
