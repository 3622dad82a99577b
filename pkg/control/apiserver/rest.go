package apiserver

import (
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// serveResource dispatches a resource request by verb and subresource.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	if res.Namespaced && info.Namespace == "" && info.Verb != "list" && info.Verb != "watch" {
		writeError(w, apierrors.NewBadRequest("the server could not find the requested resource: a namespace is required for "+res.Resource))
		return
	}
	switch info.Subresource {
	case "binding":
		if info.Verb != "create" {
			writeError(w, apierrors.NewMethodNotSupported(res.GroupResource(), info.Verb))
			return
		}
		s.serveBinding(w, r, res, info)
		return
	case "finalize":
		if info.Verb != "update" {
			writeError(w, apierrors.NewMethodNotSupported(res.GroupResource(), info.Verb))
			return
		}
	case "scale":
		s.serveScale(w, r, res, info)
		return
	}
	switch info.Verb {
	case "get":
		s.serveGet(w, r, res, info)
	case "list":
		s.serveList(w, r, res, info)
	case "watch":
		s.serveWatch(w, r, res, info)
	case "create":
		s.serveCreate(w, r, res, info)
	case "update":
		s.serveUpdate(w, r, res, info)
	case "patch":
		s.servePatch(w, r, res, info)
	case "delete":
		s.serveDelete(w, r, res, info)
	case "deletecollection":
		s.serveDeleteCollection(w, r, res, info)
	default:
		writeError(w, apierrors.NewMethodNotSupported(res.GroupResource(), r.Method))
	}
}

// respond writes one object, as a Table when the client asked for one.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, res *registry.Resource, code int, obj runtime.Object) {
	if wantsTable(r) {
		table, err := buildTable(r, res, []runtime.Object{obj}, metav1.ListMeta{ResourceVersion: mustMeta(obj).GetResourceVersion()})
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, code, table)
		return
	}
	writeJSON(w, code, obj)
}

func dryRun(r *http.Request) (bool, error) {
	values := r.URL.Query()["dryRun"]
	for _, v := range values {
		if v != metav1.DryRunAll {
			return false, apierrors.NewBadRequest("dryRun may only be All, not " + v)
		}
	}
	return len(values) > 0, nil
}

func setWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		w.Header().Add("Warning", `299 - "`+msg+`"`)
	}
}
