package deployment

import (
	"context"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
)

// isScalingEvent: the Deployment's size differs from what its active ReplicaSets were
// last sized for.
func (r *rollout) isScalingEvent() bool {
	want := strconv.Itoa(int(ptr.Deref(r.d.Spec.Replicas, 1)))
	for _, rs := range active(r.all) {
		if v, ok := rs.Annotations[desiredReplicasAnnotation]; ok && v != want {
			return true
		}
	}
	return false
}

// scale resizes without rolling out (a paused Deployment, or a new size mid-rollout): the
// only active ReplicaSet takes the new size; otherwise, for RollingUpdate, the change is
// shared out in proportion to the ReplicaSets' sizes, the largest taking what rounding
// leaves, as kube's controller does.
func (r *rollout) scale(ctx context.Context) (time.Duration, error) {
	newRS, old, err := r.replicaSets(ctx, false)
	if err != nil {
		return 0, err
	}
	if err := r.resize(ctx, newRS, old); err != nil {
		return 0, err
	}
	if r.d.Spec.Paused {
		if err := r.cleanup(ctx, r.olds(old)); err != nil {
			return 0, err
		}
	}
	return r.syncStatusOnly(ctx)
}

func (r *rollout) resize(ctx context.Context, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) error {
	want := ptr.Deref(r.d.Spec.Replicas, 1)
	act := active(r.all)
	var only *appsv1.ReplicaSet
	switch {
	case len(act) == 1:
		only = act[0]
	case len(act) == 0 && newRS != nil:
		only = newRS
	case len(act) == 0 && len(old) > 0:
		only = byAge(old)[len(old)-1]
	}
	if only != nil {
		_, err := r.scaleTo(ctx, only, want)
		return err
	}
	if len(act) == 0 {
		return nil
	}
	if newRS != nil && replicas(newRS) == want && newRS.Status.AvailableReplicas == want {
		for _, rs := range active(r.olds(old)) {
			if _, err := r.scaleTo(ctx, rs, 0); err != nil {
				return err
			}
		}
		return nil
	}
	if r.d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return nil // Recreate: the rollout itself sizes the ReplicaSets
	}
	total, _ := sumReplicas(act)
	allowed := int32(0)
	if want > 0 {
		allowed = want + maxSurge(r.d)
	}
	toAdd := allowed - total
	// Largest first; among equals, the newest first when growing, the oldest when shrinking.
	act = byAge(act)
	if toAdd > 0 {
		slices.Reverse(act)
	}
	sort.SliceStable(act, func(i, j int) bool { return replicas(act[i]) > replicas(act[j]) })
	sizes := make([]int32, len(act))
	added := int32(0)
	for i, rs := range act {
		share := r.proportion(rs, toAdd, added)
		sizes[i] = replicas(rs) + share
		added += share
	}
	sizes[0] = max(0, sizes[0]+toAdd-added)
	for i, rs := range act {
		if _, err := r.scaleTo(ctx, rs, sizes[i]); err != nil {
			return err
		}
	}
	return nil
}

// proportion is rs's share of toAdd (negative when shrinking), as kube's
// GetReplicaSetProportion: rs grows as the Deployment's most (replicas + maxSurge) grows
// from the most rs was last sized for (its max-replicas annotation), rounded, never past
// what is left to add.
func (r *rollout) proportion(rs *appsv1.ReplicaSet, toAdd, added int32) int32 {
	size := replicas(rs)
	if size == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	var fraction int32
	if want := ptr.Deref(r.d.Spec.Replicas, 1); want == 0 {
		fraction = -size
	} else {
		before, err := strconv.Atoi(rs.Annotations[maxReplicasAnnotation])
		if err != nil || before <= 0 {
			before = int(r.d.Status.Replicas) // the annotation was tampered with
		}
		if before > 0 {
			fraction = int32(math.Round(float64(size)*float64(want+maxSurge(r.d))/float64(before))) - size
		}
	}
	if toAdd > 0 {
		return min(fraction, toAdd-added)
	}
	return max(fraction, toAdd-added)
}
