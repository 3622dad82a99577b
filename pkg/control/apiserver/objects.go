package apiserver

import (
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

// storedObject is one version of a stored object as readers send it: decoded once, and
// encoded as JSON once, however many GET, LIST and WATCH requests read that version (the
// store's watch cache gives each version one store.Memo). It is shared: never modify obj.
type storedObject struct {
	obj      runtime.Object
	jsonOnce sync.Once
	json     []byte
	jsonErr  error
}

// sharedObject is decodeStored through the memo of the value's version: the first reader
// decodes, the others share the result. With a nil memo (an engine read) it decodes.
func sharedObject(res *registry.Resource, memo *store.Memo, value []byte, rev int64) (*storedObject, error) {
	v, err := memo.Do(func() (any, error) {
		obj, err := decodeStored(res, value, rev)
		if err != nil {
			return nil, err
		}
		return &storedObject{obj: obj}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*storedObject), nil
}

// JSON is the object's JSON encoding, as a response or a watch event carries it.
func (o *storedObject) JSON() ([]byte, error) {
	o.jsonOnce.Do(func() { o.json, o.jsonErr = json.Marshal(o.obj) })
	return o.json, o.jsonErr
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
