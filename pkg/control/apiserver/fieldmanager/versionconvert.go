package fieldmanager

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
// Custom resources are not in the scheme: one already at the version is returned as it is,
// or made its resource's own type if unstructured (what server-side apply merged).
func (c versionConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	from := in.GetObjectKind().GroupVersionKind()
	to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{from})
	u, isUnstructured := in.(*unstructured.Unstructured)
	if ok && from == to && !scheme.Scheme.Recognizes(from) {
		if !isUnstructured {
			return in, nil
		}
		if res, found := c.reg.ForKind(from); found {
			return typedOf(res, u)
		}
	}
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
	obj := in
	var err error
	if isUnstructured {
		if obj, err = typedOf(src, u); err != nil {
			return nil, err
		}
	}
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

// typedOf makes an unstructured object of res's kind res's own type.
func typedOf(res *registry.Resource, u *unstructured.Unstructured) (runtime.Object, error) {
	obj, err := res.New()
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", u.GroupVersionKind(), err)
	}
	return obj, nil
}

// storageOf is the resource whose version a resource's objects are stored at: the resource
// itself unless it is a converted view of another.
func storageOf(r *registry.Resource) *registry.Resource {
	if r.Conversion != nil {
		return r.Conversion.Storage
	}
	return r
}
