package apiserver

import (
	"net/http"
	"slices"
	"strings"
	"unicode"

	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/warning"
)

// subresourceVerbs are the verbs a subresource serves; the others (status, scale,
// approval, ephemeralcontainers, resize) serve objectSubresourceVerbs, as kube-apiserver's routes.
var subresourceVerbs = map[string][]string{"binding": {"create"}, "eviction": {"create"}, "finalize": {"update"}}

var objectSubresourceVerbs = []string{"get", "update", "patch"}

// serveResource dispatches a resource request by verb and subresource, and writes the
// error of a handler that fails before it has written anything: the one place errors
// become a Status.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	r = r.WithContext(warning.WithWarningRecorder(r.Context(), headerWarnings{w})) // admission's warnings
	if res.Deprecation != "" {
		addWarning(w, res.Deprecation)
	}
	// An answer asked for in YAML, errors too, as kube-apiserver negotiates its errors' too.
	if rep, err := negotiate(r, s.protobufAnswers(res, info.Verb)); err == nil && rep.yaml {
		yw, finish := responsewriters.RewriteJSON(w, asYAML)
		defer finish()
		w = yw
	}
	if err := s.dispatch(w, r, res, info); err != nil {
		if filters.TimeOutNow(r.Context()) {
			err = filters.TimeoutError(r.Context()) // what the client gets from filters.WithRequestTimeout
		}
		filters.AuditError(r.Context(), err)
		responsewriters.WriteError(w, err)
	}
}

func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	// What cannot be produced is refused before anything is read or written, as in Kubernetes.
	rep, err := negotiate(r, s.protobufAnswers(res, info.Verb))
	if err == nil && info.Verb == "watch" {
		err = rep.streamable(s.protobufAnswers(res, info.Verb))
	}
	if err != nil {
		return err
	}
	// kube-apiserver routes POST to a collection only, PUT and PATCH to an object only,
	// DELETE of a collection only where its REST has DeleteCollection.
	if info.Subresource == "" && (info.Verb == "create" && info.Name != "" || (info.Verb == "update" || info.Verb == "patch") && info.Name == "" ||
		info.Verb == "deletecollection" && res.Rules.NoDeleteCollection) {
		return methodNotAllowed()
	}
	if res.Computed != nil {
		return s.serveComputed(w, r, res, info, rep)
	}
	if info.Subresource != "" {
		verbs, ok := subresourceVerbs[info.Subresource]
		if !ok {
			verbs = objectSubresourceVerbs
		}
		// Not passed on: DELETE or POST of pods/x/status would delete or create the pod.
		if !slices.Contains(verbs, info.Verb) {
			return methodNotAllowed()
		}
	}
	switch info.Subresource {
	case "binding":
		return s.serveBinding(w, r, res, info)
	case "eviction":
		return s.serveEviction(w, r, res, info)
	case "scale":
		return s.serveScale(w, r, res, info)
	}
	if info.Verb != "get" && info.Verb != "list" && info.Verb != "watch" {
		r = s.encodings.withSharedWrite(r, res, rep)
	}
	switch info.Verb {
	case "get":
		return s.serveGet(w, r, res, info, rep)
	case "list":
		return s.serveList(w, r, res, info, rep)
	case "watch":
		return s.serveWatch(w, r, res, info, rep)
	case "create":
		return s.serveCreate(w, r, res, info)
	case "update":
		return s.serveUpdate(w, r, res, info)
	case "patch":
		return s.servePatch(w, r, res, info)
	case "delete":
		return s.serveDelete(w, r, res, info)
	case "deletecollection":
		return s.serveDeleteCollection(w, r, res, info)
	}
	return apierrors.NewMethodNotSupported(res.GroupResource(), r.Method)
}

// methodNotAllowed is kube-apiserver's answer to a method a path has no route for: the
// generic 405 Status (its message, no kind), not NewMethodNotSupported's.
func methodNotAllowed() error {
	return apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", schema.GroupResource{}, "", "", 0, false)
}

// respond writes one object in the representation the client asked for.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, res *registry.Resource, code int, obj runtime.Object) error {
	rep, err := negotiate(r, protobufEncodable(obj))
	if err == nil {
		err = rep.suits(res, false)
	}
	if err != nil {
		return err
	}
	filters.AuditResponse(r.Context(), obj, res.GVK().GroupVersion())
	switch rep.as {
	case asTable:
		table, err := buildTable(r, res, []runtime.Object{obj}, metav1.ListMeta{ResourceVersion: mustMeta(obj).GetResourceVersion()})
		if err != nil {
			return err
		}
		responsewriters.WriteJSON(w, code, table)
	case asPartialMetadata:
		responsewriters.WriteJSON(w, code, partialMetadata(obj, rep))
	default:
		if rep.protobuf {
			if raw, ok := sharedProtobuf(r, res, obj); ok {
				writeProtobufBytes(w, code, raw)
			} else {
				writeProtobuf(w, code, obj)
			}
			return nil
		}
		responsewriters.WriteJSON(w, code, obj)
	}
	return nil
}

// partialMetadata is obj's metadata as a PartialObjectMetadata of rep's version.
func partialMetadata(obj runtime.Object, rep representation) *metav1.PartialObjectMetadata {
	partial := meta.AsPartialObjectMetadata(mustMeta(obj))
	partial.TypeMeta = metav1.TypeMeta{Kind: asPartialMetadata, APIVersion: rep.apiVersion()}
	return partial
}

// dryRun reads a write's dryRun query parameter, refused as kube-apiserver's validation of
// the write's options (CreateOptions, UpdateOptions or PatchOptions) refuses it.
func dryRun(r *http.Request, options string) (bool, error) {
	values := r.URL.Query()["dryRun"]
	if errs := metav1validation.ValidateDryRun(field.NewPath("dryRun"), values); len(errs) > 0 {
		return false, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: options}, "", errs)
	}
	return len(values) > 0, nil
}

// addWarnings sends the decoding warnings of a write as soon as they are known, as
// kube-apiserver records them while decoding: they come with the answer, an error too.
// (The kind's warnings are recorded by the store once the object is valid.)
func addWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		addWarning(w, msg)
	}
}

// addWarning adds a `299 - "text"` header, quotes escaped as kube-apiserver escapes them
// (control characters, which a header cannot carry, become spaces); a warning already sent
// is not repeated, as kube's recorder drops duplicates (a write retried on a conflict
// warns again).
func addWarning(w http.ResponseWriter, msg string) {
	msg = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(msg, "?"))
	h, err := utilnet.NewWarningHeader(299, "-", msg)
	if err == nil && !slices.Contains(w.Header().Values("Warning"), h) {
		w.Header().Add("Warning", h)
	}
}

// headerWarnings sends the warnings of k8s.io/apiserver's warning.AddWarning (admission
// plugins') as `Warning:` headers of the response.
type headerWarnings struct{ w http.ResponseWriter }

func (h headerWarnings) AddWarning(_, text string) { addWarning(h.w, text) }
