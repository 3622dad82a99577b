package apiextensions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// listedCRD is a CustomResourceDefinition whose schema declares and defaults fields of
// its custom resources, as operators' do.
func listedCRD() *apiextensionsv1.CustomResourceDefinition {
	crd := established(0)
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"size": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("3")}},
			"name": str, "image": str, "zone": str,
			"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}},
			"ports": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": str, "port": {Type: "integer"},
					"protocol": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"TCP"`)}}}}}},
		}}
	return crd
}

// listServer is an API server serving crd's custom resources from engine, read through
// the watch cache when cached, as miniapi's is.
func listServer(tb testing.TB, crd *apiextensionsv1.CustomResourceDefinition, cached bool) http.Handler {
	tb.Helper()
	var st store.Interface
	if cached {
		st = storetest.Cached(tb)
	} else {
		st = storetest.Bolt(tb)
	}
	reg, err := builtin.Registry()
	if err != nil {
		tb.Fatal(err)
	}
	resources, err := Resources(crd, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := reg.Add(resources...); err != nil {
		tb.Fatal(err)
	}
	s := apiserver.New(apiserver.Config{Store: st, Registry: reg, Log: slog.New(slog.DiscardHandler)})
	if err := s.Bootstrap(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return s.Handler()
}

func serve(tb testing.TB, h http.Handler, method, path string, body []byte) []byte {
	tb.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code >= 300 {
		tb.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
	}
	return w.Body.Bytes()
}

// BenchmarkListCustomResources measures a LIST of 1000 custom resources whose schema has
// defaults, read from the storage engine (every object decoded for its reader) and
// through the watch cache (what is derived from a stored version shared by its readers).
func BenchmarkListCustomResources(b *testing.B) {
	const n = 1000
	path := "/apis/bench.example.com/v1/namespaces/default/thing0s"
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("cached=%v", cached), func(b *testing.B) {
			h := listServer(b, listedCRD(), cached)
			for i := range n {
				serve(b, h, http.MethodPost, path, thingBody(b, fmt.Sprintf("t%04d", i)))
			}
			var list struct{ Items []map[string]any }
			if err := json.Unmarshal(serve(b, h, http.MethodGet, path, nil), &list); err != nil || len(list.Items) != n {
				b.Fatalf("list: %v, %d items", err, len(list.Items))
			}
			b.ResetTimer()
			for b.Loop() {
				serve(b, h, http.MethodGet, path, nil)
			}
		})
	}
}

// BenchmarkCreateCustomResource measures a create of a custom resource whose schema has
// defaults through the handler, on the watch cache as miniapi's store is: the request's
// decoding, pruning and defaulting, managed fields, validation, storage and response.
func BenchmarkCreateCustomResource(b *testing.B) {
	h := listServer(b, listedCRD(), true)
	path := "/apis/bench.example.com/v1/namespaces/default/thing0s?fieldManager=bench"
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		serve(b, h, http.MethodPost, path, thingBody(b, fmt.Sprintf("t%06d", i)))
		i++
	}
}

// thingBody is a Thing0 of the benchmarks' CRD named name, as JSON.
func thingBody(b *testing.B, name string) []byte {
	body, err := json.Marshal(map[string]any{"apiVersion": "bench.example.com/v1", "kind": "Thing0",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"app": "bench"}},
		"spec": map[string]any{"name": "thing", "image": "registry.example.com/thing:v1.2.3", "zone": "zone-a",
			"labels": map[string]any{"tier": "backend", "team": "platform"},
			"ports":  []any{map[string]any{"name": "http", "port": 80}, map[string]any{"name": "metrics", "port": 9090}}}})
	if err != nil {
		b.Fatal(err)
	}
	return body
}
