package apiserver

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/minik8s/minik8s/pkg/control/registry"
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

func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	opts, err := deleteOptions(r)
	if err != nil {
		return err
	}
	obj, err := s.objects.Delete(r.Context(), res, info.Namespace, info.Name, opts)
	if err != nil {
		return err
	}
	return s.respond(w, r, res, http.StatusOK, obj)
}

func (s *Server) serveDeleteCollection(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	opts, err := deleteOptions(r)
	if err != nil {
		return err
	}
	sel, err := parseSelectors(r, res)
	if err != nil {
		return err
	}
	matches := func(obj runtime.Object) bool { return sel.matches(res, obj) }
	deleted, rev, err := s.objects.DeleteCollection(r.Context(), res, info.Namespace, matches, opts)
	if err != nil {
		return err
	}
	list, err := res.NewList()
	if err == nil {
		err = meta.SetList(list, deleted)
	}
	if err != nil {
		return err
	}
	lm, _ := meta.ListAccessor(list)
	lm.SetResourceVersion(strconv.FormatInt(rev, 10))
	list.GetObjectKind().SetGroupVersionKind(res.GroupVersion().WithKind(res.Kind + "List"))
	writeJSON(w, http.StatusOK, list)
	return nil
}
