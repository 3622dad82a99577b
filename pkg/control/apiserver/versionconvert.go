package apiserver

import (
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// versionConvertor is the scheme's object convertor, plus the conversions between the
// versions the registry serves over one stored version (registry.Conversion): the field
// manager converts the managed fields one version recorded when another writes.
type versionConvertor struct {
	runtime.ObjectConvertor
	reg *registry.Registry
}

func newVersionConvertor(reg *registry.Registry) versionConvertor {
	return versionConvertor{ObjectConvertor: scheme.Scheme, reg: reg}
}

// ConvertToVersion converts through the stored version where the registry knows both ends.
func (c versionConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	from := in.GetObjectKind().GroupVersionKind()
	to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{from})
	if _, unstructured := in.(runtime.Unstructured); !unstructured && ok && from == to {
		// Already at the version: the field manager only reads what it is given here, or
		// converts what it made itself, so the object need not be copied (the scheme's
		// ConvertToVersion deep-copies it: twice for each write).
		return scheme.Scheme.UnsafeConvertToVersion(in, target)
	}
	src, srcOK := c.reg.ForKind(from)
	dst, dstOK := c.reg.ForKind(to)
	if !ok || !srcOK || !dstOK || from == to || storageOf(src) != storageOf(dst) {
		return c.ObjectConvertor.ConvertToVersion(in, target)
	}
	u, isUnstructured := in.(*unstructured.Unstructured)
	obj := in
	if isUnstructured {
		typed, err := src.New()
		if err != nil {
			return nil, err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			return nil, fmt.Errorf("%s: %w", from, err)
		}
		obj = typed
	}
	var err error
	if src.Conversion != nil {
		if obj, err = src.Conversion.ToStorage(obj); err != nil {
			return nil, err
		}
	}
	if dst.Conversion != nil {
		if obj, err = dst.Conversion.FromStorage(obj); err != nil {
			return nil, err
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(to)
	if !isUnstructured {
		return obj, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: m}
	out.SetGroupVersionKind(to)
	return out, nil
}

// storageOf is the resource whose version a resource's objects are stored at: the resource
// itself unless it is a converted view of another.
func storageOf(r *registry.Resource) *registry.Resource {
	if r.Conversion != nil {
		return r.Conversion.Storage
	}
	return r
}
