package apiserver

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/openapi"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// OpenAPIDocuments serves the OpenAPI documents of the registry's built-in resources, built
// once at start, and those of custom resources, set as their CustomResourceDefinitions
// change: /openapi/v2 (JSON or the protobuf kubectl asks for first) and /openapi/v3, whose
// root lists each group version's document with a content hash. kube-openapi's handlers do
// the content negotiation, ETags and caching of the encoded documents.
type OpenAPIDocuments struct {
	v2     *handler.OpenAPIService
	static *spec.Swagger // the built-in resources' v2 spec
	v3     *handler3.OpenAPIService
	err    error // why there are no documents, if there are none

	mu sync.RWMutex
	// groupVersions are the v3 documents served: "api/v1", "apis/apps/v1"; true for the
	// built-in ones.
	groupVersions map[string]bool
}

func newOpenAPIDocuments(reg *registry.Registry, log *slog.Logger) *OpenAPIDocuments {
	docs, err := openapi.Build(reg, KubernetesVersion)
	if err != nil {
		log.Error("OpenAPI documents unavailable; kubectl explain and client-side validation will fail", "err", err)
		return &OpenAPIDocuments{err: err}
	}
	for _, gvr := range docs.Undescribed {
		log.Error("resource left out of the OpenAPI documents: its kind has no generated definition (see hack/update-openapi.sh)", "resource", gvr.String())
	}
	h := &OpenAPIDocuments{v2: handler.NewOpenAPIService(docs.V2), static: docs.V2, v3: handler3.NewOpenAPIService(), groupVersions: map[string]bool{}}
	for gv, doc := range docs.V3 {
		h.v3.UpdateGroupVersion(gv, doc)
		h.groupVersions[gv] = true
	}
	return h
}

// SetCustomResourcesV2 serves in /openapi/v2 the built-in spec merged with the custom
// resources' specs, as apiextensions-apiserver's openapi controller does: the built-in
// paths and definitions win.
func (h *OpenAPIDocuments) SetCustomResourcesV2(specs []*spec.Swagger) error {
	if h.err != nil {
		return nil
	}
	merged, err := builder.MergeSpecs(h.static, specs...)
	if err != nil {
		return fmt.Errorf("merging the OpenAPI v2 specs of custom resources: %w", err)
	}
	return h.v2.UpdateSpec(merged)
}

// SetGroupVersionV3 serves doc as /openapi/v3/apis/GROUP/VERSION, or takes that document
// away when doc is nil. A built-in group version is never replaced.
func (h *OpenAPIDocuments) SetGroupVersionV3(gv schema.GroupVersion, doc *spec3.OpenAPI) {
	if h.err != nil {
		return
	}
	path := "apis/" + gv.Group + "/" + gv.Version
	h.mu.Lock()
	defer h.mu.Unlock()
	if builtin, ok := h.groupVersions[path]; ok && builtin {
		return
	}
	if doc == nil {
		h.v3.DeleteGroupVersion(path)
		delete(h.groupVersions, path)
		return
	}
	h.v3.UpdateGroupVersion(path, doc)
	h.groupVersions[path] = false
}

// register serves /openapi/v2, /openapi/v3 and /openapi/v3/{api/v1,apis/GROUP/VERSION} on mux.
func (h *OpenAPIDocuments) register(mux *http.ServeMux) {
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

func (h *OpenAPIDocuments) serveGroupVersion(w http.ResponseWriter, r *http.Request) {
	gv := strings.TrimPrefix(r.URL.Path, "/openapi/v3/")
	h.mu.RLock() // held while serving, so that the document is not taken away meanwhile
	defer h.mu.RUnlock()
	if _, ok := h.groupVersions[gv]; !ok {
		// handler3 would answer an empty 200 for a group version it does not know.
		writeError(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return
	}
	h.v3.HandleGroupVersion(w, r)
}
