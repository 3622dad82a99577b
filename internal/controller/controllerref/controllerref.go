// Package controllerref claims objects for a controller the way kube-controller-manager's
// ControllerRefManager does: a controller owns what its selector matches and it controls;
// it adopts matching orphans and releases what it controls but no longer matches.
package controllerref

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// PatchFunc applies a strategic merge patch to obj (client.X(ns).Patch with
// types.StrategicMergePatchType).
type PatchFunc[T metav1.Object] func(ctx context.Context, obj T, patch []byte) error

// GetFunc reads the owner from the API, past the cache (client.X(ns).Get).
type GetFunc[O metav1.Object] func(ctx context.Context, name string, opts metav1.GetOptions) (O, error)

// Claim returns the objects owner controls among objs, adopting orphans that selector
// matches and releasing the ones it controls that selector no longer matches (neither
// while owner is being deleted). An object deleted meanwhile is skipped. finalizers are added on
// adoption and removed on release (the Job's tracking finalizer), as the ref manager's.
// Before the first adoption owner is read again with get, as kube's
// RecheckDeletionTimestamp: an owner deleted since the cache saw it adopts nothing. As
// kube's ClaimPods, a failure does not stop the others: the errors come back together.
func Claim[O, T metav1.Object](ctx context.Context, owner O, ownerKind schema.GroupVersionKind, get GetFunc[O], selector labels.Selector, objs []T, patch PatchFunc[T], finalizers ...string) ([]T, error) {
	var owned []T
	var errs []error
	canAdopt := sync.OnceValue(func() error { return recheck(ctx, owner, ownerKind, get) })
	for _, obj := range objs {
		ref := metav1.GetControllerOfNoCopy(obj)
		matches := selector.Matches(labels.Set(obj.GetLabels()))
		switch {
		case ref != nil && ref.UID == owner.GetUID() && matches:
			owned = append(owned, obj)
		case ref != nil && ref.UID == owner.GetUID() && owner.GetDeletionTimestamp() == nil:
			if err := apply(ctx, obj, releasePatch(owner.GetUID(), obj.GetUID(), finalizers), patch); err != nil {
				errs = append(errs, fmt.Errorf("release %s/%s: %w", obj.GetNamespace(), obj.GetName(), err))
			}
		case ref == nil && matches && owner.GetDeletionTimestamp() == nil && obj.GetDeletionTimestamp() == nil:
			err := canAdopt()
			if err == nil {
				err = apply(ctx, obj, adoptPatch(owner, ownerKind, obj.GetUID(), finalizers), patch)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("can't adopt %s %s/%s (%s): %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), obj.GetUID(), err))
				continue
			}
			owned = append(owned, obj)
		}
	}
	return owned, utilerrors.NewAggregate(errs)
}

// recheck reads owner afresh and refuses when it is being deleted or is another object
// of the same name, in the words of kube's RecheckDeletionTimestamp and canAdoptFuncs.
func recheck[O metav1.Object](ctx context.Context, owner O, kind schema.GroupVersionKind, get GetFunc[O]) error {
	fresh, err := get(ctx, owner.GetName(), metav1.GetOptions{})
	if err == nil && fresh.GetUID() != owner.GetUID() {
		err = fmt.Errorf("original %s %s/%s is gone: got uid %s, wanted %s", kind.Kind, owner.GetNamespace(), owner.GetName(), fresh.GetUID(), owner.GetUID())
	}
	if err != nil {
		return fmt.Errorf("can't recheck DeletionTimestamp: %v", err)
	}
	if ts := fresh.GetDeletionTimestamp(); ts != nil {
		return fmt.Errorf("%s/%s has just been deleted at %v", fresh.GetNamespace(), fresh.GetName(), ts)
	}
	return nil
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

// kindOf is obj's kind as kube's ref managers name it in errors: its Go type's name
// (a lister's objects carry no TypeMeta).
func kindOf(obj metav1.Object) string {
	return reflect.TypeOf(obj).Elem().Name()
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
