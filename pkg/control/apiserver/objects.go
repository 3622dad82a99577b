package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/store"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Store keys: /registry/GROUP/RESOURCE/[NAMESPACE/]NAME, "core" for the legacy group.
func resourcePrefix(res *registry.Resource) string {
	group := res.Group
	if group == "" {
		group = "core"
	}
	return "/registry/" + group + "/" + res.Resource + "/"
}

// listPrefix is the key prefix of a resource's objects, in one namespace when ns is set.
func listPrefix(res *registry.Resource, ns string) string {
	if res.Namespaced && ns != "" {
		return resourcePrefix(res) + ns + "/"
	}
	return resourcePrefix(res)
}

func objectKey(res *registry.Resource, ns, name string) string {
	if res.Namespaced {
		return resourcePrefix(res) + ns + "/" + name
	}
	return resourcePrefix(res) + name
}

// decodeStored turns a stored value into a typed object whose resourceVersion is the key's
// modification revision (the store never holds resourceVersion itself).
func decodeStored(res *registry.Resource, value []byte, rev int64) (runtime.Object, error) {
	obj, err := res.New()
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(value, obj); err != nil {
		return nil, fmt.Errorf("stored %s is corrupt: %w", res.Resource, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	setResourceVersion(obj, rev)
	return obj, nil
}

// storedObject is one version of a stored object as readers send it, shared through the
// store's memo of that version (the watch cache gives each version one) by every GET, LIST and
// WATCH that reads it. Its JSON is the stored JSON with the resourceVersion put in, with no
// decoding; it is decoded, once, only for what needs the typed object (selectors, tables).
// What it returns is shared: never modify it.
type storedObject struct {
	res   *registry.Resource
	value []byte
	rev   int64

	jsonOnce sync.Once
	json     []byte
	jsonErr  error

	objOnce sync.Once
	obj     runtime.Object
	objErr  error

	protobufOnce sync.Once
	protobuf     []byte
	protobufErr  error

	partialOnce sync.Once
	partial     []byte // the PartialObjectMetadata of meta.k8s.io/v1
	metadata    []byte // the metadata in it, for other versions
	partialErr  error
}

// sharedObject returns the storedObject of a value's version: the memo's, or a new one with a
// nil memo (a value read from the engine, not the cache).
func sharedObject(res *registry.Resource, memo *store.Memo, value []byte, rev int64) *storedObject {
	v, _ := memo.Do(func() (any, error) { return &storedObject{res: res, value: value, rev: rev}, nil })
	return v.(*storedObject)
}

// Object is the decoded object, with its resourceVersion.
func (o *storedObject) Object() (runtime.Object, error) {
	o.objOnce.Do(func() { o.obj, o.objErr = decodeStored(o.res, o.value, o.rev) })
	return o.obj, o.objErr
}

// JSON is the object as a response or a watch event carries it.
func (o *storedObject) JSON() ([]byte, error) {
	o.jsonOnce.Do(func() {
		var ok bool
		if o.json, ok = withResourceVersion(o.value, o.rev); ok {
			return
		}
		obj, err := o.Object()
		if err != nil {
			o.jsonErr = err
			return
		}
		o.json, o.jsonErr = json.Marshal(obj)
	})
	return o.json, o.jsonErr
}

// Protobuf is the object as Kubernetes protobuf, as a watch event carries it to client-go.
// The object it is encoded from is not kept (unless Object was called): what the memo holds
// is then bytes, which the garbage collector does not scan.
func (o *storedObject) Protobuf() ([]byte, error) {
	o.protobufOnce.Do(func() {
		obj, err := decodeStored(o.res, o.value, o.rev)
		if err != nil {
			o.protobufErr = err
			return
		}
		o.protobuf, o.protobufErr = encodeProtobuf(obj)
	})
	return o.protobuf, o.protobufErr
}

// PartialMetadata is the object as a PartialObjectMetadata of meta.k8s.io version (v1 or
// v1beta1), what metadata-only clients such as the garbage collector read: the stored
// metadata with the resourceVersion put in, with no decoding of the rest. The v1 form is
// shared like JSON's.
func (o *storedObject) PartialMetadata(version string) ([]byte, error) {
	o.partialOnce.Do(func() {
		md, ok := storedMetadata(o.value, o.rev)
		if !ok {
			obj, err := o.Object()
			if err == nil {
				md, err = json.Marshal(objectMeta(obj))
			}
			if err != nil {
				o.partialErr = err
				return
			}
		}
		o.partial = partialJSON("v1", md)
		o.metadata = o.partial[len(o.partial)-1-len(md) : len(o.partial)-1] // one copy held
	})
	if o.partialErr != nil || version == "v1" {
		return o.partial, o.partialErr
	}
	return partialJSON(version, o.metadata), nil
}

// partialJSON is the PartialObjectMetadata of meta.k8s.io version with this metadata JSON,
// as encoding the typed object would give it.
func partialJSON(version string, metadata []byte) []byte {
	const head, mid = `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/`, `","metadata":`
	out := make([]byte, 0, len(head)+len(version)+len(mid)+len(metadata)+1)
	out = append(append(append(append(out, head...), version...), mid...), metadata...)
	return append(out, '}')
}

// storedMetadata is the metadata object of a stored object's JSON with the resourceVersion
// put in as its first field, as withResourceVersion puts it in the whole object. Only the
// fields up to metadata (kind and apiVersion, as encodeForStore writes them) are read; what
// follows is not. ok is false when value is not a JSON object with a metadata object.
func storedMetadata(value []byte, rev int64) (md []byte, ok bool) {
	start, end, ok := metadataSpan(value)
	if !ok {
		return nil, false
	}
	return withResourceVersionAt(value[start:end], 1, rev), true
}

// withResourceVersion puts metadata.resourceVersion into a stored object's JSON (which never
// holds it) as the first field of its metadata: the object decoding and encoding again would
// give, but for the order of its fields, at the cost of a copy. ok is false when value is
// not a JSON object with a metadata object.
func withResourceVersion(value []byte, rev int64) (out []byte, ok bool) {
	if !json.Valid(value) {
		return nil, false
	}
	start, _, ok := metadataSpan(value)
	if !ok {
		return nil, false
	}
	return withResourceVersionAt(value, start+1, rev), true
}

// metadataSpan finds the top-level "metadata" object of a JSON object: value[start:end]. The
// fields after it are not read.
func metadataSpan(value []byte) (start, end int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(value))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0, 0, false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, 0, false
		}
		if key == "metadata" {
			end := int(dec.InputOffset())
			return end - len(raw), end, len(raw) >= 2 && raw[0] == '{'
		}
	}
	return 0, 0, false
}

// withResourceVersionAt copies b with a resourceVersion field put at at, just after the
// opening brace of a metadata object.
func withResourceVersionAt(b []byte, at int, rev int64) []byte {
	field := `"resourceVersion":"` + strconv.FormatInt(rev, 10) + `"`
	if rest := bytes.TrimSpace(b[at:]); len(rest) > 0 && rest[0] != '}' { // more metadata fields follow
		field += ","
	}
	out := make([]byte, 0, len(b)+len(field))
	return append(append(append(out, b[:at]...), field...), b[at:]...)
}

// encodeForStore serialises an object without its resourceVersion.
func encodeForStore(res *registry.Resource, obj runtime.Object) ([]byte, error) {
	m := mustMeta(obj)
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	defer m.SetResourceVersion(rv)
	obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	return json.Marshal(obj)
}

func setResourceVersion(obj runtime.Object, rev int64) {
	mustMeta(obj).SetResourceVersion(strconv.FormatInt(rev, 10))
}

func mustMeta(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("object %T has no metadata: %v", obj, err))
	}
	return m
}

// objectMeta returns the object's ObjectMeta struct, for the validation helpers that need it.
func objectMeta(obj runtime.Object) *metav1.ObjectMeta {
	acc, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		panic(fmt.Sprintf("object %T has no ObjectMeta", obj))
	}
	return acc.GetObjectMeta().(*metav1.ObjectMeta)
}
