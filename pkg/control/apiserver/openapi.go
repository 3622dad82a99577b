package apiserver

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/openapi"
	"github.com/minik8s/minik8s/pkg/control/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
)

// openAPIHandler serves the OpenAPI documents of the registry, built once at start:
// /openapi/v2 (JSON or the protobuf kubectl asks for first) and /openapi/v3, whose root lists
// each group version's document with a content hash. kube-openapi's handlers do the content
// negotiation, ETags and caching of the encoded documents.
type openAPIHandler struct {
	v2            *handler.OpenAPIService
	v3            *handler3.OpenAPIService
	groupVersions map[string]bool // "api/v1", "apis/apps/v1"
	err           error           // why there are no documents, if there are none
}

func newOpenAPIHandler(reg *registry.Registry, log *slog.Logger) *openAPIHandler {
	docs, err := openapi.Build(reg, KubernetesVersion)
	if err != nil {
		log.Error("OpenAPI documents unavailable; kubectl explain and client-side validation will fail", "err", err)
		return &openAPIHandler{err: err}
	}
	for _, gvr := range docs.Undescribed {
		log.Error("resource left out of the OpenAPI documents: its kind has no generated definition (see hack/update-openapi.sh)", "resource", gvr.String())
	}
	h := &openAPIHandler{v2: handler.NewOpenAPIService(docs.V2), v3: handler3.NewOpenAPIService(), groupVersions: map[string]bool{}}
	for gv, doc := range docs.V3 {
		h.v3.UpdateGroupVersion(gv, doc)
		h.groupVersions[gv] = true
	}
	return h
}

// register serves /openapi/v2, /openapi/v3 and /openapi/v3/{api/v1,apis/GROUP/VERSION} on mux.
func (h *openAPIHandler) register(mux *http.ServeMux) {
	if h.err != nil {
		unavailable := func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, apierrors.NewInternalError(fmt.Errorf("the OpenAPI documents could not be built: %w", h.err)))
		}
		mux.HandleFunc("/openapi/", unavailable)
		return
	}
	h.v2.RegisterOpenAPIVersionedService("/openapi/v2", mux)
	mux.HandleFunc("/openapi/v3", h.v3.HandleDiscovery)
	mux.HandleFunc("/openapi/v3/", h.serveGroupVersion)
}

func (h *openAPIHandler) serveGroupVersion(w http.ResponseWriter, r *http.Request) {
	gv := strings.TrimPrefix(r.URL.Path, "/openapi/v3/")
	if !h.groupVersions[gv] {
		// handler3 would answer an empty 200 for a group version it does not know.
		writeError(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return
	}
	h.v3.HandleGroupVersion(w, r)
}
