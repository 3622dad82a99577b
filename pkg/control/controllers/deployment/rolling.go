package deployment

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// fenceposts resolves maxSurge (rounded up) and maxUnavailable (rounded down) against the
// desired size; both zero would never progress, so maxUnavailable becomes 1.
func fenceposts(d *appsv1.Deployment) (surge, unavailable int32) {
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil {
		return 0, 0
	}
	want := int(ptr.Deref(d.Spec.Replicas, 1))
	def := intstr.FromString("25%")
	s, _ := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(ru.MaxSurge, def), want, true)
	u, _ := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(ru.MaxUnavailable, def), want, false)
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u)
}

func maxSurge(d *appsv1.Deployment) int32 {
	s, _ := fenceposts(d)
	return s
}

// maxUnavailable is how many of the desired pods may be unavailable (none for Recreate).
func maxUnavailable(d *appsv1.Deployment) int32 {
	want := ptr.Deref(d.Spec.Replicas, 1)
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || want == 0 {
		return 0
	}
	_, u := fenceposts(d)
	return min(u, want)
}

func sumReplicas(list []*appsv1.ReplicaSet) (spec, available int32) {
	for _, rs := range list {
		spec += replicas(rs)
		available += rs.Status.AvailableReplicas
	}
	return spec, available
}

// newReplicaSetSize is how big the new ReplicaSet may be now: for RollingUpdate, as big as
// the surge allows; for Recreate, the desired size.
func newReplicaSetSize(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	want := ptr.Deref(d.Spec.Replicas, 1)
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return want
	}
	current := int32(0)
	if newRS != nil {
		current = replicas(newRS)
	}
	total, _ := sumReplicas(all)
	room := want + maxSurge(d) - total
	if room <= 0 {
		return current
	}
	return current + min(room, want-current)
}

// rollingUpdate scales the new ReplicaSet up as far as maxSurge allows and the old ones
// down as far as maxUnavailable allows, one step per sync.
func (r *rollout) rollingUpdate(ctx context.Context) (time.Duration, error) {
	newRS, old, err := r.replicaSets(ctx, true)
	if err != nil {
		return 0, err
	}
	scaledUp, err := r.reconcileNew(ctx, newRS)
	if err != nil || scaledUp {
		return r.syncRolloutStatus(ctx, newRS, err)
	}
	scaledDown, err := r.reconcileOld(ctx, newRS, active(r.olds(old)))
	if err != nil || scaledDown {
		return r.syncRolloutStatus(ctx, newRS, err)
	}
	if r.complete(newRS) {
		if err := r.cleanup(ctx, r.olds(old)); err != nil {
			return 0, err
		}
	}
	return r.syncRolloutStatus(ctx, newRS, nil)
}

// olds is the current copy of each of the old ReplicaSets (some were written this sync).
func (r *rollout) olds(old []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := make([]*appsv1.ReplicaSet, 0, len(old))
	for _, o := range old {
		for _, rs := range r.all {
			if rs.UID == o.UID {
				out = append(out, rs)
			}
		}
	}
	return out
}

func (r *rollout) reconcileNew(ctx context.Context, newRS *appsv1.ReplicaSet) (bool, error) {
	want := ptr.Deref(r.d.Spec.Replicas, 1)
	switch {
	case replicas(newRS) == want:
		return false, nil
	case replicas(newRS) > want:
		return r.scaleTo(ctx, newRS, want)
	}
	return r.scaleTo(ctx, newRS, newReplicaSetSize(r.d, r.all, newRS))
}

// reconcileOld scales old ReplicaSets down while keeping at least desired − maxUnavailable
// pods available, unhealthy old pods first.
func (r *rollout) reconcileOld(ctx context.Context, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) (bool, error) {
	oldTotal, _ := sumReplicas(old)
	if oldTotal == 0 {
		return false, nil
	}
	total, _ := sumReplicas(r.all)
	minAvailable := ptr.Deref(r.d.Spec.Replicas, 1) - maxUnavailable(r.d)
	newUnavailable := replicas(newRS) - newRS.Status.AvailableReplicas
	budget := total - minAvailable - newUnavailable
	if budget <= 0 {
		return false, nil
	}
	scaled := false
	// Unavailable old pods cost no availability: remove them first.
	for _, rs := range byAge(old) {
		if budget <= 0 {
			break
		}
		unhealthy := replicas(rs) - rs.Status.AvailableReplicas
		if unhealthy <= 0 {
			continue
		}
		n := min(unhealthy, budget)
		changed, err := r.scaleTo(ctx, rs, replicas(rs)-n)
		if err != nil {
			return scaled, err
		}
		scaled = scaled || changed
		budget -= n
	}
	// Then available ones, down to the minimum available.
	_, available := sumReplicas(r.all)
	if available <= minAvailable {
		return scaled, nil
	}
	down := available - minAvailable
	for _, rs := range byAge(r.olds(old)) {
		if down <= 0 {
			break
		}
		n := min(replicas(rs), down)
		if n == 0 {
			continue
		}
		changed, err := r.scaleTo(ctx, rs, replicas(rs)-n)
		if err != nil {
			return scaled, err
		}
		scaled = scaled || changed
		down -= n
	}
	return scaled, nil
}
