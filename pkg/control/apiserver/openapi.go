package apiserver

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/control/openapi"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/cached"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// OpenAPIDocuments serves the OpenAPI documents of the registry's built-in resources and
// those of custom resources, set as their CustomResourceDefinitions change: /openapi/v2
// (JSON or the protobuf kubectl asks for first) and /openapi/v3, whose root lists each group
// version's document with a content hash. kube-openapi's handlers do the content
// negotiation, ETags and caching of the encoded documents.
//
// The built-in documents are built when first asked for, and let go 10 s after their last
// use: what stays is what kube-openapi's caches keep of a document they encoded (its JSON,
// the protobuf if asked for, and the document itself). The v3 root is asked for at start
// and every 5 s by the MutatingAdmissionPolicy plugin's loopback client, as in
// kube-apiserver: its hashes are those of each group version's JSON, so the v3 documents
// are built and encoded at start; the v2 document (~7 MB built, and its encodings) only
// when a client (kubectl) asks for it, built again then.
type OpenAPIDocuments struct {
	reg       *registry.Registry // the built-in resources
	buildable func() error       // builds the documents on its first call: whether they can be

	buildMu sync.Mutex
	built   *openapi.Documents // kept for a while after a build, for the encodings that follow
	drop    *time.Timer

	v2 *handler.OpenAPIService
	v3 *handler3.OpenAPIService

	mu sync.RWMutex
	// groupVersions are the v3 documents served: "api/v1", "apis/apps/v1"; true for the
	// built-in ones.
	groupVersions map[string]bool

	encodedMu sync.Mutex // not mu: a v3 document is asked for while mu is held to serve it
	// encodedV3 are the built-in group versions whose document the handler has encoded.
	encodedV3 map[string]bool
	// customV2 are the custom resources' v2 specs, changed customV2Changes times (the v2
	// spec's etag); encodedV2 is the number of changes the handler last encoded.
	customV2        []*spec.Swagger
	customV2Changes int
	encodedV2       int
}

// builtInETag is the etag of a built-in group version's v3 document: the same for the
// process's life. kube-openapi's caches encode a document again only when its etag changes.
const builtInETag = "built-in"

// newOpenAPIDocuments describes the resources reg holds now, its built-in ones: those of
// custom resources added later come through SetCustomResourcesV2 and SetGroupVersionV3.
func newOpenAPIDocuments(reg *registry.Registry, log *slog.Logger) *OpenAPIDocuments {
	builtIn, err := registry.New(reg.Resources()...)
	h := &OpenAPIDocuments{
		reg:           builtIn,
		v3:            handler3.NewOpenAPIService(),
		groupVersions: map[string]bool{},
		encodedV3:     map[string]bool{},
		encodedV2:     -1,
	}
	h.buildable = sync.OnceValue(func() error {
		if err != nil {
			return err
		}
		docs, err := h.documents()
		if err != nil {
			log.Error("OpenAPI documents unavailable; kubectl explain and client-side validation will fail", "err", err)
			return err
		}
		for _, gvr := range docs.Undescribed {
			log.Error("resource left out of the OpenAPI documents: its kind has no generated definition (see hack/update-openapi.sh)", "resource", gvr.String())
		}
		return nil
	})
	h.v2 = handler.NewOpenAPIServiceLazy(cached.Func(h.v2Spec))
	for _, gv := range reg.GroupVersions() {
		path := openapi.V3Path(gv)
		h.v3.UpdateGroupVersionLazy(path, cached.Func(func() (*spec3.OpenAPI, string, error) { return h.v3Doc(path) }))
		h.groupVersions[path] = true
	}
	return h
}

// keepBuilt is how long the built documents are kept after their last use: a client's
// requests for /openapi/v3 and its group versions, or for /openapi/v2 and /openapi/v3,
// come within a second or two.
const keepBuilt = 10 * time.Second

// documents are the built-in documents, built unless they were used within keepBuilt.
func (h *OpenAPIDocuments) documents() (*openapi.Documents, error) {
	h.buildMu.Lock()
	defer h.buildMu.Unlock()
	if h.built == nil {
		docs, err := openapi.Build(h.reg, KubernetesVersion)
		if err != nil {
			return nil, err
		}
		h.built = docs
		h.drop = time.AfterFunc(keepBuilt, func() {
			h.buildMu.Lock()
			defer h.buildMu.Unlock()
			h.built = nil
		})
	}
	h.drop.Reset(keepBuilt)
	return h.built, nil
}

// The handlers' caches ask for a document on every request, to compare its etag, and
// encode what they get only when that etag is new (or when encoding failed, which a built
// document does not): a document is built and handed over only then, nil otherwise.

// v3Doc is the source of a built-in group version's v3 document.
func (h *OpenAPIDocuments) v3Doc(path string) (*spec3.OpenAPI, string, error) {
	h.encodedMu.Lock()
	defer h.encodedMu.Unlock()
	if h.encodedV3[path] {
		return nil, builtInETag, nil
	}
	docs, err := h.documents()
	if err != nil {
		return nil, "", err
	}
	h.encodedV3[path] = true
	return docs.V3[path], builtInETag, nil
}

// v2Spec is the source of the v2 spec: the built-in spec merged with the custom resources'
// specs as apiextensions-apiserver's openapi controller does (the built-in paths and
// definitions win); its etag counts their changes.
func (h *OpenAPIDocuments) v2Spec() (*spec.Swagger, string, error) {
	h.encodedMu.Lock()
	defer h.encodedMu.Unlock()
	etag := strconv.Itoa(h.customV2Changes)
	if h.encodedV2 == h.customV2Changes {
		return nil, etag, nil
	}
	docs, err := h.documents()
	if err != nil {
		return nil, "", err
	}
	merged, err := builder.MergeSpecs(docs.V2, h.customV2...)
	if err != nil {
		return nil, "", fmt.Errorf("merging the OpenAPI v2 specs of custom resources: %w", err)
	}
	h.encodedV2 = h.customV2Changes
	return merged, etag, nil
}

// SetCustomResourcesV2 serves in /openapi/v2 the built-in spec merged with the custom
// resources' specs, merged when the spec is next asked for.
func (h *OpenAPIDocuments) SetCustomResourcesV2(specs []*spec.Swagger) {
	h.encodedMu.Lock()
	defer h.encodedMu.Unlock()
	h.customV2 = specs
	h.customV2Changes++
}

// SetGroupVersionV3 serves doc as /openapi/v3/apis/GROUP/VERSION, or takes that document
// away when doc is nil. A built-in group version is never replaced.
func (h *OpenAPIDocuments) SetGroupVersionV3(gv schema.GroupVersion, doc *spec3.OpenAPI) {
	path := openapi.V3Path(gv)
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
	v2 := http.NewServeMux()
	h.v2.RegisterOpenAPIVersionedService("/openapi/v2", v2)
	mux.Handle("/openapi/v2", h.whenBuilt(v2))
	mux.Handle("/openapi/v3", h.whenBuilt(http.HandlerFunc(h.v3.HandleDiscovery)))
	mux.Handle("/openapi/v3/", h.whenBuilt(http.HandlerFunc(h.serveGroupVersion)))
}

// whenBuilt serves with next if the built-in documents can be built, or says why not.
func (h *OpenAPIDocuments) whenBuilt(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.buildable(); err != nil {
			writeError(w, apierrors.NewInternalError(fmt.Errorf("the OpenAPI documents could not be built: %w", err)))
			return
		}
		next.ServeHTTP(w, r)
	})
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
