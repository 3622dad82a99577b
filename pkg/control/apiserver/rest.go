package apiserver

import (
	"net/http"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// subresourceVerbs are the subresources that serve one verb only.
var subresourceVerbs = map[string]string{"binding": "create", "eviction": "create", "finalize": "update"}

// serveResource dispatches a resource request by verb and subresource.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	if res.Namespaced && info.Namespace == "" && info.Verb != "list" && info.Verb != "watch" {
		writeError(w, apierrors.NewBadRequest("the server could not find the requested resource: a namespace is required for "+res.Resource))
		return
	}
	// What cannot be produced is refused before anything is read or written, as in Kubernetes.
	rep, err := negotiate(r, s.protobufAnswers(res, info.Verb))
	if err != nil {
		writeError(w, err)
		return
	}
	if verb, only := subresourceVerbs[info.Subresource]; only && info.Verb != verb {
		writeError(w, apierrors.NewMethodNotSupported(res.GroupResource(), info.Verb))
		return
	}
	switch info.Subresource {
	case "binding":
		s.serveBinding(w, r, res, info)
		return
	case "eviction":
		s.serveEviction(w, r, res, info)
		return
	case "scale":
		s.serveScale(w, r, res, info)
		return
	}
	switch info.Verb {
	case "get":
		s.serveGet(w, r, res, info, rep)
	case "list":
		s.serveList(w, r, res, info, rep)
	case "watch":
		s.serveWatch(w, r, res, info, rep)
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

// respond writes one object in the representation the client asked for.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, res *registry.Resource, code int, obj runtime.Object) {
	rep, err := negotiate(r, protobufEncodable(obj))
	if err == nil {
		err = rep.suits(res, false)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	switch rep.as {
	case asTable:
		table, err := buildTable(r, res, []runtime.Object{obj}, metav1.ListMeta{ResourceVersion: mustMeta(obj).GetResourceVersion()})
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, code, table)
	case asPartialMetadata:
		writeJSON(w, code, partialMetadata(obj, rep))
	default:
		if rep.protobuf {
			writeProtobuf(w, code, obj)
			return
		}
		writeJSON(w, code, obj)
	}
}

// partialMetadata is obj's metadata as a PartialObjectMetadata of rep's version.
func partialMetadata(obj runtime.Object, rep representation) *metav1.PartialObjectMetadata {
	partial := meta.AsPartialObjectMetadata(mustMeta(obj))
	partial.TypeMeta = metav1.TypeMeta{Kind: asPartialMetadata, APIVersion: rep.apiVersion()}
	return partial
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

// setWarnings sends the decoding warnings and, for a write of the object itself (not its
// status), what the kind's rules say minik8s does not act on yet, as `Warning:` headers.
func setWarnings(w http.ResponseWriter, res *registry.Resource, subresource string, obj runtime.Object, warnings []string) {
	if subresource == "" && res.Rules.Warnings != nil && obj != nil {
		warnings = append(warnings, res.Rules.Warnings(obj)...)
	}
	for _, msg := range warnings {
		w.Header().Add("Warning", `299 - "`+strings.ReplaceAll(msg, `"`, `'`)+`"`)
	}
}
