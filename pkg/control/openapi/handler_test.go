package openapi

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// openAPIFixture serves the OpenAPI documents of the built-in registry through a mux.
type openAPIFixture struct {
	t   *testing.T
	h   *Handler
	mux *http.ServeMux
}

func newOpenAPIFixture(t *testing.T) *openAPIFixture {
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	f := &openAPIFixture{t: t, h: NewHandler(reg, "v1.32.0", slog.New(slog.DiscardHandler)), mux: http.NewServeMux()}
	f.h.Register(f.mux)
	return f
}

// built says whether the built-in documents are held now.
func (f *openAPIFixture) built() bool {
	f.h.buildMu.Lock()
	defer f.h.buildMu.Unlock()
	return f.h.built != nil
}

// letGo drops the built documents, as keepBuilt's timer does.
func (f *openAPIFixture) letGo() {
	f.h.buildMu.Lock()
	defer f.h.buildMu.Unlock()
	f.h.built = nil
}

func (f *openAPIFixture) request(path, accept string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Accept", accept)
	f.mux.ServeHTTP(rec, req)
	return rec
}

func (f *openAPIFixture) get(path string) string {
	f.t.Helper()
	rec := f.request(path, "application/json")
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK {
		f.t.Fatalf("GET %s: %d %s", path, rec.Code, body)
	}
	return string(body)
}

// root is /openapi/v3's list: each group version's URL, with its hash.
func (f *openAPIFixture) root() map[string]string {
	f.t.Helper()
	var root struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(f.get("/openapi/v3")), &root); err != nil {
		f.t.Fatal(err)
	}
	urls := map[string]string{}
	for gv, p := range root.Paths {
		urls[gv] = p.URL
	}
	return urls
}

// The root lists each group version with the hash of its document's JSON, without keeping
// the documents, not even for a while after the first root request built them to hash:
// they are built again when a group version is asked for, and let go after.
func TestOpenAPIV3RootKeepsOnlyHashes(t *testing.T) {
	f := newOpenAPIFixture(t)
	if f.built() {
		t.Fatal("documents built before any request")
	}
	urls := f.root()
	if f.built() {
		t.Error("documents kept after the first /openapi/v3 hashed them")
	}
	if again := f.root(); fmt.Sprint(again) != fmt.Sprint(urls) {
		t.Errorf("the root changed:\n%v\n%v", urls, again)
	}
	if f.built() {
		t.Error("documents built again for the root")
	}

	doc := f.get(urls["api/v1"])
	if !strings.Contains(doc, `"io.k8s.api.core.v1.Pod"`) {
		t.Errorf("api/v1 has no Pod:\n%.300s", doc)
	}
	if want := fmt.Sprintf("/openapi/v3/api/v1?hash=%X", sha512.Sum512([]byte(doc))); urls["api/v1"] != want {
		t.Errorf("the root lists api/v1 at %s, want the hash of its JSON: %s", urls["api/v1"], want)
	}
	if !f.built() {
		t.Error("a group version served without building the documents")
	}
}

// A group version's document is served as handler3 serves it: immutable under its hash,
// a redirect for another hash, protobuf when asked for, 404 for an unknown one.
func TestOpenAPIV3GroupVersionHeaders(t *testing.T) {
	f := newOpenAPIFixture(t)
	url := f.root()["apis/apps/v1"]
	rec := f.request(url, "application/json")
	if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "public, immutable" || rec.Header().Get("Content-Type") != "application/json" ||
		rec.Header().Get("Etag") != `"`+strings.TrimPrefix(url, "/openapi/v3/apis/apps/v1?hash=")+`"` {
		t.Errorf("GET %s: %d %v", url, rec.Code, rec.Header())
	}
	etag := rec.Header().Get("Etag")
	notModified := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/openapi/v3/apis/apps/v1", nil)
	req.Header.Set("If-None-Match", etag)
	f.mux.ServeHTTP(notModified, req)
	if notModified.Code != http.StatusNotModified {
		t.Errorf("GET with If-None-Match %s: %d, want 304", etag, notModified.Code)
	}
	if rec := f.request("/openapi/v3/apis/apps/v1?hash=0", "application/json"); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != url {
		t.Errorf("GET with a stale hash: %d to %q, want 301 to %s", rec.Code, rec.Header().Get("Location"), url)
	}
	if rec := f.request(url, "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"); rec.Code != http.StatusOK ||
		rec.Header().Get("Content-Type") != "application/com.github.proto-openapi.spec.v3.v1.0+protobuf" || rec.Body.Len() == 0 {
		t.Errorf("GET %s as protobuf: %d %v, %d bytes", url, rec.Code, rec.Header(), rec.Body.Len())
	}
	if rec := f.request(url, "text/html"); rec.Code != http.StatusNotAcceptable {
		t.Errorf("GET %s as text/html: %d, want 406", url, rec.Code)
	}
	if rec := f.request("/openapi/v3/apis/nope/v1", "application/json"); rec.Code != http.StatusNotFound {
		t.Errorf("unknown group version: %d, want 404", rec.Code)
	}
}

// A custom resources' group version joins the root with its own hash, changes it when its
// document changes, and leaves it when taken away; a built-in one is never replaced.
func TestOpenAPIV3CustomGroupVersion(t *testing.T) {
	f := newOpenAPIFixture(t)
	thing := func(description string) *spec3.OpenAPI {
		return &spec3.OpenAPI{Version: "3.0.0", Info: &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: "v1", Description: description}}}
	}
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	f.h.SetGroupVersionV3(gv, thing("one"))
	first := f.root()["apis/example.com/v1"]
	if doc := f.get(first); !strings.Contains(doc, `"one"`) {
		t.Errorf("GET %s: %s", first, doc)
	}
	f.h.SetGroupVersionV3(gv, thing("two"))
	second := f.root()["apis/example.com/v1"]
	if second == first || !strings.HasPrefix(second, "/openapi/v3/apis/example.com/v1?hash=") {
		t.Errorf("the root lists the changed document at %s (was %s)", second, first)
	}
	if doc := f.get(second); !strings.Contains(doc, `"two"`) {
		t.Errorf("GET %s: %s", second, doc)
	}
	f.h.SetGroupVersionV3(gv, nil)
	if url, ok := f.root()["apis/example.com/v1"]; ok {
		t.Errorf("the root still lists a taken-away group version at %s", url)
	}
	if rec := f.request("/openapi/v3/apis/example.com/v1", "application/json"); rec.Code != http.StatusNotFound {
		t.Errorf("taken-away group version: %d, want 404", rec.Code)
	}
	f.h.SetGroupVersionV3(schema.GroupVersion{Group: "apps", Version: "v1"}, thing("apps"))
	if doc := f.get("/openapi/v3/apis/apps/v1"); !strings.Contains(doc, `"io.k8s.api.apps.v1.Deployment"`) {
		t.Error("a custom document replaced the built-in apps/v1")
	}
}

// /openapi/v2 builds the documents again when they were let go, and again after a custom
// resource changes it.
func TestOpenAPIV2BuiltOnDemand(t *testing.T) {
	f := newOpenAPIFixture(t)
	if v2 := f.get("/openapi/v2"); !strings.Contains(v2, `"io.k8s.api.core.v1.Pod"`) {
		t.Errorf("/openapi/v2 has no Pod:\n%.300s", v2)
	}
	f.letGo()
	ok := map[int]spec.Response{http.StatusOK: {ResponseProps: spec.ResponseProps{Description: "OK", Schema: spec.RefSchema("#/definitions/com.example.v1.Thing")}}}
	thing := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger: "2.0",
		Paths: &spec.Paths{Paths: map[string]spec.PathItem{"/apis/example.com/v1/things": {PathItemProps: spec.PathItemProps{
			Get: &spec.Operation{OperationProps: spec.OperationProps{ID: "listExampleComV1Thing", Responses: &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: ok}}}},
		}}}},
		Definitions: spec.Definitions{"com.example.v1.Thing": *spec.StringProperty()},
	}}
	f.h.SetCustomResourcesV2([]*spec.Swagger{thing})
	if v2 := f.get("/openapi/v2"); !strings.Contains(v2, `"com.example.v1.Thing"`) || !strings.Contains(v2, `"io.k8s.api.core.v1.Pod"`) {
		t.Errorf("/openapi/v2 lacks the custom resource or Pod:\n%.300s", v2)
	}
	f.h.SetCustomResourcesV2(nil)
	if v2 := f.get("/openapi/v2"); strings.Contains(v2, `"com.example.v1.Thing"`) {
		t.Error("/openapi/v2 still has the custom resource taken away")
	}
}
