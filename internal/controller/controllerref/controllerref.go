// Package controllerref claims objects for a controller the way kube-controller-manager's
// ControllerRefManager does: a controller owns what its selector matches and it controls;
// it adopts matching orphans and releases what it controls but no longer matches.
package controllerref

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// PatchFunc applies a strategic merge patch to obj (client.X(ns).Patch with
// types.StrategicMergePatchType).
type PatchFunc[T metav1.Object] func(ctx context.Context, obj T, patch []byte) error

// Claim returns the objects owner controls among objs, adopting orphans that selector
// matches and releasing the ones it controls that selector no longer matches (neither
// while owner is being deleted). An object deleted meanwhile is skipped. finalizers are added on
// adoption and removed on release (the Job's tracking finalizer), as the ref manager's.
func Claim[T metav1.Object](ctx context.Context, owner metav1.Object, ownerKind schema.GroupVersionKind, selector labels.Selector, objs []T, patch PatchFunc[T], finalizers ...string) ([]T, error) {
	var owned []T
	for _, obj := range objs {
		ref := metav1.GetControllerOfNoCopy(obj)
		matches := selector.Matches(labels.Set(obj.GetLabels()))
		switch {
		case ref != nil && ref.UID == owner.GetUID() && matches:
			owned = append(owned, obj)
		case ref != nil && ref.UID == owner.GetUID() && owner.GetDeletionTimestamp() == nil:
			if err := apply(ctx, obj, releasePatch(owner.GetUID(), obj.GetUID(), finalizers), patch); err != nil {
				return nil, fmt.Errorf("release %s: %w", obj.GetName(), err)
			}
		case ref == nil && matches && owner.GetDeletionTimestamp() == nil && obj.GetDeletionTimestamp() == nil:
			if err := apply(ctx, obj, adoptPatch(owner, ownerKind, obj.GetUID(), finalizers), patch); err != nil {
				return nil, fmt.Errorf("adopt %s: %w", obj.GetName(), err)
			}
			owned = append(owned, obj)
		}
	}
	return owned, nil
}

// Controlled returns the objects among objs whose controller is owner, adopting and
// releasing nothing: for controllers that own what they make, without a selector.
func Controlled[T metav1.Object](objs []T, owner types.UID) []T {
	var owned []T
	for _, obj := range objs {
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && ref.UID == owner {
			owned = append(owned, obj)
		}
	}
	return owned
}

func apply[T metav1.Object](ctx context.Context, obj T, body map[string]any, patch PatchFunc[T]) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	if err := patch(ctx, obj, data); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// adoptPatch adds owner as the controller, and finalizers; the uid guards against a
// namesake.
func adoptPatch(owner metav1.Object, kind schema.GroupVersionKind, uid types.UID, finalizers []string) map[string]any {
	meta := map[string]any{
		"ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(owner, kind)},
		"uid":             uid,
	}
	if len(finalizers) > 0 {
		meta["finalizers"] = finalizers // a merge list: added to the object's own
	}
	return map[string]any{"metadata": meta}
}

// releasePatch removes owner's reference (ownerReferences merge by uid) and finalizers.
func releasePatch(owner, uid types.UID, finalizers []string) map[string]any {
	meta := map[string]any{
		"ownerReferences": []map[string]any{{"$patch": "delete", "uid": owner}},
		"uid":             uid,
	}
	if len(finalizers) > 0 {
		meta["$deleteFromPrimitiveList/finalizers"] = finalizers
	}
	return map[string]any{"metadata": meta}
}
