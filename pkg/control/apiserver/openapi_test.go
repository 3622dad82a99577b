package apiserver

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The built-in documents are built on the first request, let go later, and built again
// when a document must be encoded again; what is served does not change.
func TestOpenAPIDocumentsBuiltOnDemand(t *testing.T) {
	reg, err := registry.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	h := newOpenAPIDocuments(reg, slog.New(slog.DiscardHandler))
	mux := http.NewServeMux()
	h.register(mux)
	built := func() bool {
		h.buildMu.Lock()
		defer h.buildMu.Unlock()
		return h.built != nil
	}
	let := func() {
		h.buildMu.Lock()
		defer h.buildMu.Unlock()
		h.built = nil
	}
	get := func(path string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Accept", "application/json")
		mux.ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, rec.Code, body)
		}
		return string(body)
	}

	if built() {
		t.Fatal("documents built before any request")
	}
	var root struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(get("/openapi/v3")), &root); err != nil {
		t.Fatal(err)
	}
	if !built() {
		t.Fatal("documents not built for /openapi/v3")
	}
	let()
	// Encoded by the root's request: served without building again.
	if doc := get(root.Paths["api/v1"].URL); !strings.Contains(doc, `"io.k8s.api.core.v1.Pod"`) {
		t.Errorf("api/v1 has no Pod:\n%.300s", doc)
	}
	if built() {
		t.Error("documents built again for an encoded group version")
	}

	// /openapi/v2 builds them again, and again after a custom resource changes it.
	if v2 := get("/openapi/v2"); !strings.Contains(v2, `"io.k8s.api.core.v1.Pod"`) {
		t.Errorf("/openapi/v2 has no Pod:\n%.300s", v2)
	}
	let()
	ok := map[int]spec.Response{http.StatusOK: {ResponseProps: spec.ResponseProps{Description: "OK", Schema: spec.RefSchema("#/definitions/com.example.v1.Thing")}}}
	thing := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger: "2.0",
		Paths: &spec.Paths{Paths: map[string]spec.PathItem{"/apis/example.com/v1/things": {PathItemProps: spec.PathItemProps{
			Get: &spec.Operation{OperationProps: spec.OperationProps{ID: "listExampleComV1Thing", Responses: &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: ok}}}},
		}}}},
		Definitions: spec.Definitions{"com.example.v1.Thing": *spec.StringProperty()},
	}}
	h.SetCustomResourcesV2([]*spec.Swagger{thing})
	if v2 := get("/openapi/v2"); !strings.Contains(v2, `"com.example.v1.Thing"`) || !strings.Contains(v2, `"io.k8s.api.core.v1.Pod"`) {
		t.Errorf("/openapi/v2 lacks the custom resource or Pod:\n%.300s", v2)
	}
	h.SetCustomResourcesV2(nil)
	if v2 := get("/openapi/v2"); strings.Contains(v2, `"com.example.v1.Thing"`) {
		t.Error("/openapi/v2 still has the custom resource taken away")
	}
}
