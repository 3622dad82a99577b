package generic

import (
	"context"
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/registry"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// GetScale reads the Scale of an object of a kind with a scale subresource.
func (s *Store) GetScale(ctx context.Context, res *registry.Resource, ns, name string) (*autoscalingv1.Scale, error) {
	obj, err := s.Get(ctx, res, ns, name)
	if err != nil {
		return nil, err
	}
	return toScale(res, obj), nil
}

// UpdateScale sets spec.replicas to what change makes of the current Scale of parent, the
// stored object, and returns the new Scale and object. A resourceVersion left in the Scale
// must be the object's current one; a uid, that of the object (opts.UID, a PUT's, is checked
// by Update first).
func (s *Store) UpdateScale(ctx context.Context, res *registry.Resource, ns, name string, opts UpdateOptions, change func(parent runtime.Object, cur *autoscalingv1.Scale) (*autoscalingv1.Scale, error)) (*autoscalingv1.Scale, runtime.Object, error) {
	opts.Subresource = "scale"
	obj, err := s.Update(ctx, res, ns, name, opts, func(cur runtime.Object) (runtime.Object, error) {
		scale, err := change(cur, toScale(res, cur))
		if err != nil {
			return nil, err
		}
		if errs := validation.ValidateNonnegativeField(int64(scale.Spec.Replicas), field.NewPath("spec", "replicas")); len(errs) > 0 {
			return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), name, errs)
		}
		if uid := MustMeta(cur).GetUID(); res.Rules.Scale.UIDPrecondition && scale.UID != "" && scale.UID != uid {
			scales := schema.GroupResource{Group: res.Group, Resource: res.Resource + "/scale"}
			return nil, apierrors.NewConflict(scales, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", scale.UID, uid))
		}
		res.Rules.Scale.SetReplicas(cur, scale.Spec.Replicas)
		MustMeta(cur).SetResourceVersion(scale.ResourceVersion)
		return cur, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return toScale(res, obj), obj, nil
}

// toScale is the Scale of an object of a kind with a scale subresource.
func toScale(res *registry.Resource, obj runtime.Object) *autoscalingv1.Scale {
	spec, status, selector := res.Rules.Scale.Replicas(obj)
	m := MustMeta(obj)
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: autoscalingv1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: selector},
	}
}
