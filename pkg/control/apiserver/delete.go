package apiserver

import (
	"bufio"
	"io"
	"net/http"
	"strconv"

	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// deleteOptions reads DeleteOptions as kube-apiserver does: from the body (kubectl sends
// one), or from the query when there is no body, then validated (422 on DeleteOptions).
func deleteOptions(r *http.Request) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	body := bufio.NewReader(r.Body)
	if _, err := body.Peek(1); err == nil {
		r.Body = io.NopCloser(body)
		if _, err := decodeBody(r, &opts, schema.GroupVersionKind{}, validationIgnore); err != nil {
			return opts, err
		}
	} else if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return opts, apierrors.NewBadRequest(err.Error())
	}
	if errs := metav1validation.ValidateDeleteOptions(&opts); len(errs) > 0 {
		return opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	return opts, nil
}

func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	opts, err := deleteOptions(r)
	if err != nil {
		return err
	}
	obj, removed, err := s.objects.Delete(r.Context(), res, info.Namespace, info.Name, opts)
	if err != nil {
		return err
	}
	code := http.StatusOK
	// A cascade asked by the deprecated orphanDependents false and still under way is
	// accepted, not done, as kube's handler answers it.
	if !removed && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	if !removed || res.Rules.ReturnDeletedObject {
		return s.respond(w, r, res, code, obj)
	}
	// Gone: a Status naming it, its kind given as the resource (kube's finalizeDelete).
	m := mustMeta(obj)
	st := successStatus(0) // no code in it, as in kube's
	st.Details = &metav1.StatusDetails{Name: m.GetName(), Group: res.Group, Kind: res.Resource, UID: m.GetUID()}
	filters.AuditResponse(r.Context(), &st, res.GVK().GroupVersion())
	responsewriters.WriteJSON(w, code, st)
	return nil
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
	if err != nil {
		return err
	}
	if !registry.IsCustom(res.GVK()) {
		// The items of a typed list name no kind or version, as kube's (a custom
		// resource's unstructured ones do). The objects are this request's own, decoded
		// for it.
		for _, obj := range deleted {
			obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		}
	}
	if err := meta.SetList(list, deleted); err != nil {
		return err
	}
	lm, _ := meta.ListAccessor(list)
	lm.SetResourceVersion(strconv.FormatInt(rev, 10))
	list.GetObjectKind().SetGroupVersionKind(res.GroupVersion().WithKind(res.Kind + "List"))
	responsewriters.WriteJSON(w, http.StatusOK, list)
	return nil
}
