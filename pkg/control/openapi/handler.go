package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/munnerz/goautoneg"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/cached"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Handler serves the OpenAPI documents of the registry's built-in resources and
// those of custom resources, set as their CustomResourceDefinitions change: /openapi/v2
// (JSON or the protobuf kubectl asks for first, through kube-openapi's handler) and
// /openapi/v3, whose root lists each group version's document with the hash of its JSON,
// served as kube-openapi's handler3 serves them.
//
// The built-in documents are built when a group version or the v2 spec is asked for, and
// let go 10 s after their last use. The v3 root is asked for at start and every 5 s by the
// MutatingAdmissionPolicy plugin's loopback client, as in kube-apiserver: the first request
// builds the documents to hash each group version's JSON and lets them go, keeping only the
// hashes (they are the same for the process's life), so the root never builds again; a
// group version's document is built and encoded when a client (kubectl) asks for it.
// kube-openapi's handler3 would keep every document and its JSON for the process's life
// (~16 MB).
type Handler struct {
	reg     *registry.Registry // the built-in resources
	version string             // the Kubernetes version the documents describe (Build's)
	log     *slog.Logger
	// builtInHashes are the hashes of the built-in group versions' v3 JSON, by path,
	// computed on the first call; an error says why the documents cannot be built.
	builtInHashes func() (map[string]string, error)
	hashedAt      time.Time // when builtInHashes built them: their Last-Modified

	buildMu sync.Mutex
	built   *Documents // kept for a while after a build, for the requests that follow
	drop    *time.Timer

	v2 *handler.OpenAPIService

	mu sync.RWMutex
	// builtIn are the built-in group versions' paths: "api/v1", "apis/apps/v1".
	builtIn map[string]bool
	// custom are the custom resources' v3 documents, by path.
	custom map[string]customV3

	encodedMu sync.Mutex
	// customV2 are the custom resources' v2 specs, changed customV2Changes times (the v2
	// spec's etag); encodedV2 is the number of changes the handler last encoded.
	customV2        []*spec.Swagger
	customV2Changes int
	encodedV2       int
}

// customV3 is a custom resources' group version's document, encoded again when asked for.
type customV3 struct {
	doc      *spec3.OpenAPI
	hash     string
	err      error // why it could not be encoded
	modified time.Time
}

// NewHandler describes the resources reg holds now, its built-in ones, at Kubernetes version
// version: those of custom resources added later come through SetCustomResourcesV2 and
// SetGroupVersionV3.
func NewHandler(reg *registry.Registry, version string, log *slog.Logger) *Handler {
	builtIn, err := registry.New(reg.Resources()...)
	h := &Handler{reg: builtIn, version: version, log: log, builtIn: map[string]bool{}, custom: map[string]customV3{}, encodedV2: -1}
	h.builtInHashes = sync.OnceValues(func() (map[string]string, error) {
		if err != nil {
			return nil, err
		}
		hashes, err := h.hashBuiltIn()
		if err != nil {
			h.log.Error("OpenAPI documents unavailable; kubectl explain and client-side validation will fail", "err", err)
		}
		return hashes, err
	})
	h.v2 = handler.NewOpenAPIServiceLazy(cached.Func(h.v2Spec))
	for _, gv := range reg.GroupVersions() {
		h.builtIn[V3Path(gv)] = true
	}
	return h
}

// hashBuiltIn builds the documents and hashes each group version's v3 JSON. The documents
// are not kept for the requests that follow: the first root request comes from the
// MutatingAdmissionPolicy plugin at start, which asks for no group version unless a policy
// needs one, so keeping them would hold ~20 MB for 10 s under the first load.
func (h *Handler) hashBuiltIn() (map[string]string, error) {
	docs, err := Build(h.reg, h.version)
	if err != nil {
		return nil, err
	}
	for _, gvr := range docs.Undescribed {
		h.log.Error("resource left out of the OpenAPI documents: its kind has no generated definition (see hack/update-openapi.sh)", "resource", gvr.String())
	}
	hashes := make(map[string]string, len(docs.V3))
	for path, doc := range docs.V3 {
		data, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("encoding the OpenAPI v3 document of %s: %w", path, err)
		}
		hashes[path] = hashOf(data)
	}
	h.hashedAt = time.Now()
	return hashes, nil
}

// hashOf is kube-openapi's etag of an encoded document: its SHA-512 in upper-case hex.
func hashOf(data []byte) string { return fmt.Sprintf("%X", sha512.Sum512(data)) }

// keepBuilt is how long the built documents are kept after their last use: a client's
// requests for /openapi/v3 and its group versions, or for /openapi/v2 and /openapi/v3,
// come within a second or two.
const keepBuilt = 10 * time.Second

// documents are the built-in documents, built unless they were used within keepBuilt.
func (h *Handler) documents() (*Documents, error) {
	h.buildMu.Lock()
	defer h.buildMu.Unlock()
	if h.built == nil {
		docs, err := Build(h.reg, h.version)
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

// v2Spec is the source of the v2 spec: the built-in spec merged with the custom resources'
// specs as apiextensions-apiserver's openapi controller does (the built-in paths and
// definitions win); its etag counts their changes. kube-openapi's handler asks for it on
// every request, to compare its etag, and encodes what it gets only when that etag is new:
// the spec is built and handed over only then, nil otherwise.
func (h *Handler) v2Spec() (*spec.Swagger, string, error) {
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
func (h *Handler) SetCustomResourcesV2(specs []*spec.Swagger) {
	h.encodedMu.Lock()
	defer h.encodedMu.Unlock()
	h.customV2 = specs
	h.customV2Changes++
}

// SetGroupVersionV3 serves doc as /openapi/v3/apis/GROUP/VERSION, or takes that document
// away when doc is nil. A built-in group version is never replaced. doc is kept, not
// changed: it is encoded now for its hash, and again when asked for.
func (h *Handler) SetGroupVersionV3(gv schema.GroupVersion, doc *spec3.OpenAPI) {
	path := V3Path(gv)
	if h.builtIn[path] {
		return
	}
	v := customV3{doc: doc, modified: time.Now()}
	if doc != nil {
		data, err := json.Marshal(doc)
		v.hash, v.err = hashOf(data), err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if doc == nil {
		delete(h.custom, path)
		return
	}
	h.custom[path] = v
}

// Register serves /openapi/v2, /openapi/v3 and /openapi/v3/{api/v1,apis/GROUP/VERSION} on mux.
func (h *Handler) Register(mux *http.ServeMux) {
	v2 := http.NewServeMux()
	h.v2.RegisterOpenAPIVersionedService("/openapi/v2", v2)
	mux.Handle("/openapi/v2", h.whenBuilt(v2))
	mux.Handle("/openapi/v3", h.whenBuilt(http.HandlerFunc(h.serveRoot)))
	mux.Handle("/openapi/v3/", h.whenBuilt(http.HandlerFunc(h.serveGroupVersion)))
}

// whenBuilt serves with next if the built-in documents can be built, or says why not.
func (h *Handler) whenBuilt(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := h.builtInHashes(); err != nil {
			responsewriters.WriteError(w, apierrors.NewInternalError(fmt.Errorf("the OpenAPI documents could not be built: %w", err)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveRoot lists each group version's document at its URL with the hash of its JSON, as
// handler3.OpenAPIService.HandleDiscovery does.
func (h *Handler) serveRoot(w http.ResponseWriter, r *http.Request) {
	builtIn, _ := h.builtInHashes() // whenBuilt has seen no error
	hashes := maps.Clone(builtIn)
	modified := h.hashedAt
	h.mu.RLock()
	for path, v := range h.custom {
		if v.err != nil {
			h.mu.RUnlock()
			responsewriters.WriteError(w, apierrors.NewInternalError(fmt.Errorf("encoding the OpenAPI v3 document of %s: %w", path, v.err)))
			return
		}
		hashes[path] = v.hash
		if v.modified.After(modified) {
			modified = v.modified
		}
	}
	h.mu.RUnlock()
	root := handler3.OpenAPIV3Discovery{Paths: make(map[string]handler3.OpenAPIV3DiscoveryGroupVersion, len(hashes))}
	for path, hash := range hashes {
		root.Paths[path] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: groupVersionURL(path, hash)}
	}
	data, err := json.Marshal(root)
	if err != nil {
		responsewriters.WriteError(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Etag", strconv.Quote(hashOf(data)))
	w.Header().Set("Content-Type", "application/json")
	http.ServeContent(w, r, "/openapi/v3", modified, bytes.NewReader(data))
}

// groupVersionURL is where the root lists a group version's document: handler3's
// /openapi/v3/apis/apps/v1?hash=HASH.
func groupVersionURL(path, hash string) string {
	u := url.URL{Path: "/openapi/v3/" + path, RawQuery: url.Values{"hash": {hash}}.Encode()}
	return u.String()
}

// groupVersionJSON is the JSON of the group version's document at path, false if none is served.
func (h *Handler) groupVersionJSON(path string) ([]byte, time.Time, bool, error) {
	h.mu.RLock()
	v, custom := h.custom[path]
	h.mu.RUnlock()
	if custom {
		data, err := json.Marshal(v.doc)
		return data, v.modified, true, err
	}
	if builtIn, _ := h.builtInHashes(); builtIn[path] == "" {
		return nil, time.Time{}, false, nil
	}
	docs, err := h.documents()
	if err != nil {
		return nil, time.Time{}, true, err
	}
	data, err := json.Marshal(docs.V3[path])
	return data, h.hashedAt, true, err
}

// The encodings of a group version's document, in handler3's order of preference: JSON,
// then protobuf under its two names (answered with the first).
var v3Encodings = []struct{ subType, contentType string }{
	{"json", "application/json"},
	{"com.github.proto-openapi.spec.v3.v1.0+protobuf", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"},
	{"com.github.proto-openapi.spec.v3@v1.0+protobuf", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"},
}

// serveGroupVersion serves a group version's document as handler3.OpenAPIService's
// HandleGroupVersion does: in the encoding the Accept header asks for (406 for none), with
// its hash as the Etag, cacheable for a year when asked for by its hash and redirected to
// the current hash when asked for by another.
func (h *Handler) serveGroupVersion(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/openapi/v3/")
	data, modified, ok, err := h.groupVersionJSON(path)
	switch {
	case !ok:
		// handler3 would answer an empty 200 for a group version it does not know.
		responsewriters.WriteError(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return
	case err != nil:
		responsewriters.WriteError(w, apierrors.NewInternalError(fmt.Errorf("encoding the OpenAPI v3 document of %s: %w", path, err)))
		return
	}
	hash := hashOf(data)
	w.Header().Add("Vary", "Accept")
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		for _, enc := range v3Encodings {
			if (clause.Type != "application" && clause.Type != "*") || (clause.SubType != enc.subType && clause.SubType != "*") {
				continue
			}
			if enc.subType != "json" {
				if data, err = handler3.ToV3ProtoBinary(data); err != nil {
					responsewriters.WriteError(w, apierrors.NewInternalError(fmt.Errorf("encoding the OpenAPI v3 document of %s: %w", path, err)))
					return
				}
			}
			w.Header().Set("Content-Type", enc.contentType)
			w.Header().Set("Etag", strconv.Quote(hash))
			if asked := r.URL.Query().Get("hash"); asked != "" {
				if asked != hash {
					http.Redirect(w, r, groupVersionURL(path, hash), http.StatusMovedPermanently)
					return
				}
				w.Header().Set("Cache-Control", "public, immutable")
				w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).Format(time.RFC1123))
			}
			http.ServeContent(w, r, "", modified, bytes.NewReader(data))
			return
		}
	}
	w.WriteHeader(http.StatusNotAcceptable)
}
