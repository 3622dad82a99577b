package deployment

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// recreate scales every old ReplicaSet to zero, waits until none of their pods runs, then
// scales the new one up to the desired size.
func (r *rollout) recreate(ctx context.Context, selector labels.Selector) (time.Duration, error) {
	newRS, old, err := r.replicaSets(ctx, false)
	if err != nil {
		return 0, err
	}
	scaledDown := false
	for _, rs := range active(old) {
		changed, err := r.scaleTo(ctx, rs, 0)
		if err != nil {
			return r.syncRolloutStatus(ctx, newRS, err)
		}
		scaledDown = scaledDown || changed
	}
	if scaledDown {
		return r.syncRolloutStatus(ctx, newRS, nil)
	}
	running, err := r.oldPodsRunning(newRS, selector)
	if err != nil || running {
		return r.syncRolloutStatus(ctx, newRS, err)
	}
	if newRS == nil {
		if newRS, old, err = r.replicaSets(ctx, true); err != nil {
			return 0, err
		}
	}
	if _, err := r.scaleTo(ctx, newRS, ptr.Deref(r.d.Spec.Replicas, 1)); err != nil {
		return r.syncRolloutStatus(ctx, newRS, err)
	}
	if r.complete(newRS) {
		if err := r.cleanup(ctx, r.olds(old)); err != nil {
			return 0, err
		}
	}
	return r.syncRolloutStatus(ctx, newRS, nil)
}

// oldPodsRunning says whether any pod of an old ReplicaSet still counts or runs.
func (r *rollout) oldPodsRunning(newRS *appsv1.ReplicaSet, selector labels.Selector) (bool, error) {
	pods, err := r.c.pods.Pods(r.d.Namespace).List(selector)
	if err != nil {
		return false, err
	}
	for _, rs := range r.all {
		if (newRS == nil || rs.UID != newRS.UID) && rs.Status.Replicas > 0 {
			return true, nil
		}
	}
	old := map[types.UID]bool{}
	for _, rs := range r.all {
		if newRS == nil || rs.UID != newRS.UID {
			old[rs.UID] = true
		}
	}
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref != nil && old[ref.UID] && pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded {
			return true, nil
		}
	}
	return false, nil
}
