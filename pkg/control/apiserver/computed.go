package apiserver

import (
	"net/http"
	"strconv"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serveComputed answers get and list of a computed resource (registry.Resource.Computed).
func (s *Server) serveComputed(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo, rep representation) error {
	if info.Verb != "get" && info.Verb != "list" {
		return apierrors.NewMethodNotSupported(res.GroupResource(), info.Verb)
	}
	objs, err := res.Computed(r.Context())
	if err != nil {
		return err
	}
	for _, obj := range objs {
		obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	}
	if info.Verb == "get" {
		for _, obj := range objs {
			if mustMeta(obj).GetName() == info.Name {
				return s.respond(w, r, res, http.StatusOK, obj)
			}
		}
		return apierrors.NewNotFound(res.GroupResource(), info.Name)
	}
	if err := rep.suits(res, true); err != nil {
		return err
	}
	// Nothing is stored: the list is as of the store's current revision, as kube-apiserver's.
	listMeta := metav1.ListMeta{ResourceVersion: strconv.FormatInt(s.store.Revision(), 10)}
	if rep.as == asTable {
		table, err := buildTable(r, res, objs, listMeta)
		if err != nil {
			return err
		}
		responsewriters.WriteJSON(w, http.StatusOK, table)
		return nil
	}
	list, err := res.NewList()
	if err != nil {
		return err
	}
	if err := meta.SetList(list, objs); err != nil {
		return err
	}
	list.GetObjectKind().SetGroupVersionKind(res.GroupVersion().WithKind(res.Kind + "List"))
	if lm, err := meta.ListAccessor(list); err == nil {
		lm.SetResourceVersion(listMeta.ResourceVersion)
	}
	responsewriters.WriteJSON(w, http.StatusOK, list)
	return nil
}
