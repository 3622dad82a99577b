package deployment

import (
	"context"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// isScalingEvent: the Deployment's size differs from what its active ReplicaSets were
// last sized for.
func (r *rollout) isScalingEvent() bool {
	want := strconv.Itoa(int(ptrOr(r.d.Spec.Replicas, 1)))
	for _, rs := range active(r.all) {
		if v, ok := rs.Annotations[desiredReplicasAnnotation]; ok && v != want {
			return true
		}
	}
	return false
}

// scale resizes without rolling out (a paused Deployment, or a new size mid-rollout): the
// only active ReplicaSet takes the new size; otherwise the change is shared out in
// proportion to the ReplicaSets' sizes, the largest taking what rounding leaves.
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
	want := ptrOr(r.d.Spec.Replicas, 1)
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
	total, _ := sumReplicas(act)
	allowed := want
	if r.d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		allowed += maxSurge(r.d)
	}
	toAdd := allowed - total
	sort.SliceStable(act, func(i, j int) bool { return replicas(act[i]) > replicas(act[j]) })
	sizes := make([]int32, len(act))
	added := int32(0)
	for i, rs := range act {
		share := int32(int64(replicas(rs)) * int64(toAdd) / int64(max(total, 1)))
		sizes[i] = max(0, replicas(rs)+share)
		added += sizes[i] - replicas(rs)
	}
	sizes[0] = max(0, sizes[0]+toAdd-added)
	for i, rs := range act {
		if _, err := r.scaleTo(ctx, rs, sizes[i]); err != nil {
			return err
		}
	}
	return nil
}
