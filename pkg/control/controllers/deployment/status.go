package deployment

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func newCondition(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, now time.Time, reason, msg string) appsv1.DeploymentCondition {
	at := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: t, Status: status, LastUpdateTime: at, LastTransitionTime: at, Reason: reason, Message: msg}
}

func getCondition(st appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition puts c in place unless the same status and reason are already there (then
// nothing changes); a status that stays keeps its transition time.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(*st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var out []appsv1.DeploymentCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

// calculateStatus counts the pods of every ReplicaSet and of the new one, and sets the
// Available condition: at least desired − maxUnavailable pods available.
func (r *rollout) calculateStatus(newRS *appsv1.ReplicaSet) appsv1.DeploymentStatus {
	st := *r.d.Status.DeepCopy()
	st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas = 0, 0, 0, 0
	var wanted int32 // by the ReplicaSets' specs, which count surge pods mid-rollout
	for _, rs := range r.all {
		wanted += ptr.Deref(rs.Spec.Replicas, 1)
		st.Replicas += rs.Status.Replicas
		st.ReadyReplicas += rs.Status.ReadyReplicas
		st.AvailableReplicas += rs.Status.AvailableReplicas
	}
	if newRS != nil {
		st.UpdatedReplicas = newRS.Status.Replicas
	}
	st.TerminatingReplicas = terminatingReplicas(r.all)
	// As kube's calculateStatus: the ReplicaSets' wanted pods not available, not the
	// Deployment's.
	st.UnavailableReplicas = max(0, wanted-st.AvailableReplicas)
	want := ptr.Deref(r.d.Spec.Replicas, 1)
	st.ObservedGeneration = r.d.Generation
	now := r.c.clock.Now()
	if st.AvailableReplicas >= want-maxUnavailable(r.d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, now, "MinimumReplicasAvailable", "Deployment has minimum availability."))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, now, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."))
	}
	return st
}

// terminatingReplicas sums the ReplicaSets' pods being deleted (kube's
// GetTerminatingReplicaCountForReplicaSets): a set the controller has never synced counts
// for nothing, and one synced without the count leaves the sum unknown (nil).
func terminatingReplicas(sets []*appsv1.ReplicaSet) *int32 {
	n := int32(0)
	for _, rs := range sets {
		switch {
		case rs == nil, rs.Status.ObservedGeneration == 0 && rs.Status.TerminatingReplicas == nil:
		case rs.Status.TerminatingReplicas == nil:
			return nil
		default:
			n += *rs.Status.TerminatingReplicas
		}
	}
	return &n
}

// complete: every desired pod is updated and available and no old pod is left.
func (r *rollout) complete(newRS *appsv1.ReplicaSet) bool {
	st := r.calculateStatus(newRS)
	return completeStatus(r.d, st)
}

func completeStatus(d *appsv1.Deployment, st appsv1.DeploymentStatus) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	return st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want && st.ObservedGeneration >= d.Generation
}

// syncRolloutStatus writes the status with the Progressing condition (complete,
// progressing, or past its deadline) and any ReplicaSet's failure; it returns when to look
// again for a deadline to pass, and syncErr if there was one.
func (r *rollout) syncRolloutStatus(ctx context.Context, newRS *appsv1.ReplicaSet, syncErr error) (time.Duration, error) {
	d := r.d
	st := r.calculateStatus(newRS)
	now := r.c.clock.Now()
	var again time.Duration
	if d.Spec.ProgressDeadlineSeconds != nil && !d.Spec.Paused {
		name := d.Name
		if newRS != nil {
			name = newRS.Name
		}
		cur := getCondition(d.Status, appsv1.DeploymentProgressing)
		deadline := time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
		switch {
		case completeStatus(d, st):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, now, "NewReplicaSetAvailable",
				fmt.Sprintf("ReplicaSet %q has successfully progressed.", name)))
		case progressing(d, st):
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, now, "ReplicaSetUpdated", fmt.Sprintf("ReplicaSet %q is progressing.", name))
			if cur != nil && cur.Status == corev1.ConditionTrue {
				c.LastTransitionTime = cur.LastTransitionTime
			}
			removeCondition(&st, appsv1.DeploymentProgressing)
			st.Conditions = append(st.Conditions, c)
			again = deadline
		case cur != nil && cur.Reason != "NewReplicaSetAvailable" && cur.Reason != "ProgressDeadlineExceeded":
			if left := cur.LastUpdateTime.Add(deadline).Sub(now); left > 0 {
				again = left + time.Second
			} else {
				setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, now, "ProgressDeadlineExceeded",
					fmt.Sprintf("ReplicaSet %q has timed out progressing.", name)))
				// Only the condition, as Kubernetes: its controller records no Event here.
			}
		}
	}
	setReplicaFailure(&st, r.all, now)
	if err := r.writeStatus(ctx, st); err != nil {
		return 0, err
	}
	return again, syncErr
}

// progressing: more pods updated, ready or available than the status last said, or fewer old.
func progressing(d *appsv1.Deployment, st appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas || st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas || st.AvailableReplicas > old.AvailableReplicas
}

// setReplicaFailure copies a ReplicaSet's ReplicaFailure condition (a template the API
// refuses), so `kubectl describe deploy` names the error.
func setReplicaFailure(st *appsv1.DeploymentStatus, all []*appsv1.ReplicaSet, now time.Time) {
	for _, rs := range all {
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
				setCondition(st, newCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, now, c.Reason, c.Message))
				return
			}
		}
	}
	removeCondition(st, appsv1.DeploymentReplicaFailure)
}

// syncStatusOnly writes the counts without judging progress (paused, scaling, deleting).
func (r *rollout) syncStatusOnly(ctx context.Context) (time.Duration, error) {
	newRS, _ := r.split()
	st := r.calculateStatus(newRS)
	setReplicaFailure(&st, r.all, r.c.clock.Now())
	return 0, r.writeStatus(ctx, st)
}

func (r *rollout) writeStatus(ctx context.Context, st appsv1.DeploymentStatus) error {
	if equality.Semantic.DeepEqual(st, r.d.Status) {
		return nil
	}
	d := r.d.DeepCopy()
	d.Status = st
	_, err := r.c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// checkPausedCondition says Progressing Unknown while paused (DeploymentPaused) and on
// resume (DeploymentResumed), as kube-controller-manager does, so rollout status and the
// progress deadline pause with it. A reported ProgressDeadlineExceeded stays: the lack of
// progress is the news.
func (r *rollout) checkPausedCondition(ctx context.Context) error {
	if r.d.Spec.ProgressDeadlineSeconds == nil {
		return nil
	}
	cur := getCondition(r.d.Status, appsv1.DeploymentProgressing)
	if cur != nil && cur.Reason == "ProgressDeadlineExceeded" {
		return nil
	}
	now := r.c.clock.Now()
	st := *r.d.Status.DeepCopy()
	switch {
	case r.d.Spec.Paused && (cur == nil || cur.Reason != "DeploymentPaused"):
		setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, now, "DeploymentPaused", "Deployment is paused"))
	case !r.d.Spec.Paused && cur != nil && cur.Reason == "DeploymentPaused":
		setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, now, "DeploymentResumed", "Deployment is resumed"))
	default:
		return nil
	}
	d := r.d.DeepCopy()
	d.Status = st
	updated, err := r.c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	r.d = updated
	return nil
}
