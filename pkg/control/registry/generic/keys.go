package generic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/minik8s/minik8s/pkg/control/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Store keys: /registry/GROUP/RESOURCE/[NAMESPACE/]NAME, "core" for the legacy group; a
// resource stored as another (Conversion) has that one's keys, as events.k8s.io Events are
// core ones.
func resourcePrefix(res *registry.Resource) string {
	if res.Conversion != nil {
		res = res.Conversion.Storage
	}
	group := res.Group
	if group == "" {
		group = "core"
	}
	return "/registry/" + group + "/" + res.Resource + "/"
}

// ListPrefix is the key prefix of a resource's objects, in one namespace when ns is set.
func ListPrefix(res *registry.Resource, ns string) string {
	if res.Namespaced && ns != "" {
		return resourcePrefix(res) + ns + "/"
	}
	return resourcePrefix(res)
}

// Key is the store key of one object.
func Key(res *registry.Resource, ns, name string) string {
	if res.Namespaced {
		return resourcePrefix(res) + ns + "/" + name
	}
	return resourcePrefix(res) + name
}

// Decode turns a stored value into a typed object whose resourceVersion is the key's
// modification revision (the store never holds resourceVersion itself).
func Decode(res *registry.Resource, value []byte, rev int64) (runtime.Object, error) {
	stored := res
	if res.Conversion != nil {
		stored = res.Conversion.Storage
	}
	obj, err := stored.New()
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(value, obj); err != nil {
		return nil, fmt.Errorf("stored %s is corrupt: %w", res.Resource, err)
	}
	if stored.Rules.Decoded != nil {
		if err := stored.Rules.Decoded(obj); err != nil {
			return nil, fmt.Errorf("stored %s does not fit its schema: %w", res.Resource, err)
		}
	}
	if res.Conversion != nil {
		if obj, err = res.Conversion.FromStorage(obj); err != nil {
			return nil, fmt.Errorf("stored %s cannot be converted to %s: %w", res.Resource, res.GroupVersion(), err)
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	SetResourceVersion(obj, rev)
	return obj, nil
}

// encode serialises an object without its resourceVersion, at its resource's stored version.
func encode(res *registry.Resource, obj runtime.Object) ([]byte, error) {
	if res.Conversion != nil {
		stored, err := res.Conversion.ToStorage(obj)
		var status apierrors.APIStatus
		if errors.As(err, &status) { // the conversion's own error (a failed conversion webhook)
			return nil, err
		}
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s cannot be stored as %s: %v", res.GVK(), res.Conversion.Storage.GVK(), err))
		}
		res, obj = res.Conversion.Storage, stored
	}
	m := MustMeta(obj)
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	defer m.SetResourceVersion(rv)
	obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	return json.Marshal(obj)
}

// writeResponse is what a write of obj, stored as data at rev, answers. For a resource whose
// objects are converted to be stored, it is the stored object read back at the resource's
// version, as kube-apiserver decodes what it stored: what the conversion changes (a
// conversion webhook's labels) shows. A dry run (rev 0) answers no resourceVersion.
func writeResponse(res *registry.Resource, obj runtime.Object, data []byte, rev int64) (runtime.Object, error) {
	if res.Conversion != nil {
		read, err := Decode(res, data, rev)
		if err != nil {
			return nil, err
		}
		obj = read
	}
	if rev == 0 {
		MustMeta(obj).SetResourceVersion("")
	} else {
		SetResourceVersion(obj, rev)
	}
	return obj, nil
}

// SetResourceVersion sets obj's resourceVersion to a store revision.
func SetResourceVersion(obj runtime.Object, rev int64) {
	MustMeta(obj).SetResourceVersion(strconv.FormatInt(rev, 10))
}

// MustMeta is obj's metadata; every kind of the registry has some.
func MustMeta(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("object %T has no metadata: %v", obj, err))
	}
	return m
}

// ObjectMeta returns the object's ObjectMeta struct, for the validation helpers that need it.
func ObjectMeta(obj runtime.Object) *metav1.ObjectMeta {
	acc, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		panic(fmt.Sprintf("object %T has no ObjectMeta", obj))
	}
	return acc.GetObjectMeta().(*metav1.ObjectMeta)
}
