package replicaset

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// claimPods returns the pods set controls, adopting orphans its selector matches and
// releasing pods it controls that its selector no longer matches (a pod relabelled out is
// released and replaced), as kube-controller-manager's PodControllerRefManager.
func (c *Controller) claimPods(ctx context.Context, set *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	var owned []*corev1.Pod
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		matches := selector.Matches(labels.Set(pod.Labels))
		switch {
		case ref != nil && ref.UID == set.UID && matches:
			owned = append(owned, pod)
		case ref != nil && ref.UID == set.UID:
			if err := c.patchOwner(ctx, pod, releasePatch(set.UID)); err != nil {
				return nil, fmt.Errorf("release pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
		case ref == nil && matches && set.DeletionTimestamp == nil:
			if err := c.patchOwner(ctx, pod, adoptPatch(set, c.kind)); err != nil {
				return nil, fmt.Errorf("adopt pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			owned = append(owned, pod)
		}
	}
	return owned, nil
}

// patchOwner applies a strategic merge patch of the pod's ownerReferences (merged by uid),
// guarded by the pod's uid; a pod gone meanwhile is nothing to claim.
func (c *Controller) patchOwner(ctx context.Context, pod *corev1.Pod, patch map[string]any) error {
	patch["metadata"].(map[string]any)["uid"] = pod.UID
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func adoptPatch(set *appsv1.ReplicaSet, k *kind) map[string]any {
	return map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(set, k.gvk)},
	}}
}

func releasePatch(owner types.UID) map[string]any {
	return map[string]any{"metadata": map[string]any{
		"ownerReferences": []map[string]any{{"$patch": "delete", "uid": owner}},
	}}
}
