package apiserver

import (
	"bytes"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWithResourceVersion(t *testing.T) {
	for in, want := range map[string]string{
		`{"kind":"Pod","metadata":{"name":"a"},"spec":{}}`: `{"kind":"Pod","metadata":{"resourceVersion":"42","name":"a"},"spec":{}}`,
		`{"metadata":{}}`: `{"metadata":{"resourceVersion":"42"}}`,
		`{ "spec": {"metadata": {"x": 1}}, "metadata" : { "n": 1 } }`: `{ "spec": {"metadata": {"x": 1}}, "metadata" : {"resourceVersion":"42", "n": 1 } }`,
		`{"kind":"Pod"}`:                     "",
		`{"metadata":"a"}`:                   "",
		`{"metadata":{"name":"a"}`:           "",
		`["metadata",{}]`:                    "",
		`{"kind":"Pod","metadata":{"a":1}}x`: "",
	} {
		got, ok := withResourceVersion([]byte(in), 42)
		if ok != (want != "") || string(got) != want {
			t.Errorf("withResourceVersion(%s) = %s, %v; want %s", in, got, ok, want)
		}
	}
}

// Readers of one version's bytes share what is derived from them; other bytes, even equal,
// do not; the entry goes once the bytes are collected.
func TestEncodingsShareByTheValuesBytes(t *testing.T) {
	reg, err := registry.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	res, _ := reg.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	var e encodings
	value := []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default"}}`)
	a, b := e.object(res, value, 7), e.object(res, value, 7)
	ja, err := a.JSON()
	if err != nil {
		t.Fatal(err)
	}
	jb, _ := b.JSON()
	if a.derived != b.derived || unsafe.SliceData(ja) != unsafe.SliceData(jb) {
		t.Fatal("two readers of the same bytes derived their JSON twice")
	}
	if c := e.object(res, bytes.Clone(value), 7); c.derived == a.derived {
		t.Fatal("other bytes shared a derivation")
	}
	if d := e.object(res, value, 8); d.derived == a.derived {
		t.Fatal("another revision shared a derivation")
	}
	value, a, b = nil, nil, nil
	for i := 0; i < 20 && entries(&e) > 0; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := entries(&e); n != 0 {
		t.Errorf("%d entries left after their bytes were collected", n)
	}
}

func entries(e *encodings) int {
	n := 0
	e.m.Range(func(any, any) bool { n++; return true })
	return n
}
