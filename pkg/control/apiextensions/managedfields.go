package apiextensions

import (
	"bytes"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// canonicalManagedFields are entries as their round trip through unstructured values makes
// them (what SetContent of Content gives, what a custom resource's managed fields always
// went through as its strategies changed it): each entry's fields as encoding/json writes
// them decoded (keys sorted), its time to the second. The fields' conversion, most of the
// cost, is remembered by their bytes: objects of one shape share them.
func canonicalManagedFields(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	if entries == nil {
		return nil
	}
	out := make([]metav1.ManagedFieldsEntry, len(entries))
	for i, e := range entries {
		canonical, known := canonicalFields.get(e.FieldsV1)
		if known {
			e.FieldsV1 = nil
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&e)
		if err == nil {
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &out[i])
		}
		if err != nil {
			panic(fmt.Sprintf("a custom resource's managed fields do not convert: %v", err)) // they were decoded from JSON
		}
		switch {
		case known:
			out[i].FieldsV1 = &metav1.FieldsV1{Raw: bytes.Clone(canonical)}
		case e.FieldsV1 != nil && out[i].FieldsV1 != nil:
			canonicalFields.put(e.FieldsV1.Raw, bytes.Clone(out[i].FieldsV1.Raw))
		}
	}
	return out
}

// managedFieldsContent are entries as unstructured values, as the unstructured converter
// makes them, each entry's fields decoded once per shape.
func managedFieldsContent(entries []metav1.ManagedFieldsEntry) ([]any, error) {
	out := make([]any, len(entries))
	for i, e := range entries {
		decoded, known := fieldsContent.get(e.FieldsV1)
		if known {
			e.FieldsV1 = nil
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&e)
		if err != nil {
			return nil, err
		}
		if known {
			m["fieldsV1"] = runtime.DeepCopyJSON(decoded)
		} else if d, ok := m["fieldsV1"].(map[string]any); ok && e.FieldsV1 != nil {
			fieldsContent.put(e.FieldsV1.Raw, runtime.DeepCopyJSON(d))
		}
		out[i] = m
	}
	return out, nil
}

// shapeCache maps the bytes of managed fields to what they convert to, for the last few
// hundred shapes; what it holds is never changed.
type shapeCache[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

const managedFieldsShapes = 256

var (
	canonicalFields = &shapeCache[[]byte]{m: map[string][]byte{}}
	fieldsContent   = &shapeCache[map[string]any]{m: map[string]map[string]any{}}
)

func (c *shapeCache[V]) get(f *metav1.FieldsV1) (V, bool) {
	var none V
	if f == nil || len(f.Raw) == 0 {
		return none, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[string(f.Raw)]
	return v, ok
}

func (c *shapeCache[V]) put(raw []byte, v V) {
	if len(raw) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= managedFieldsShapes {
		clear(c.m)
	}
	c.m[string(raw)] = v
}
