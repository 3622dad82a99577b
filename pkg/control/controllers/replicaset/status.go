package replicaset

import (
	"github.com/minik8s/minik8s/internal/controller/podready"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// calculateStatus counts set's pods: all, fully labelled (every template label), ready, and
// available (ready for minReadySeconds); a failed create or delete shows as the
// ReplicaFailure condition with the API's first error, cleared once managing succeeds.
func (c *Controller) calculateStatus(set *appsv1.ReplicaSet, owned []*corev1.Pod, manageErr error) appsv1.ReplicaSetStatus {
	st := *set.Status.DeepCopy()
	st.Replicas = int32(len(owned))
	st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas = 0, 0, 0
	templateLabels := labels.Set(set.Spec.Template.Labels).AsSelectorPreValidated()
	now := c.clock.Now()
	for _, pod := range owned {
		if templateLabels.Matches(labels.Set(pod.Labels)) {
			st.FullyLabeledReplicas++
		}
		if podready.Ready(pod) {
			st.ReadyReplicas++
			if podready.Available(pod, set.Spec.MinReadySeconds, now) {
				st.AvailableReplicas++
			}
		}
	}
	st.ObservedGeneration = set.Generation
	failure := replicaFailure(set, len(owned), manageErr)
	st.Conditions = setFailureCondition(st.Conditions, failure)
	return st
}

// replicaFailure is the ReplicaFailure condition a failed manageReplicas calls for, or nil.
func replicaFailure(set *appsv1.ReplicaSet, have int, manageErr error) *appsv1.ReplicaSetCondition {
	if manageErr == nil {
		return nil
	}
	reason := "FailedCreate"
	if have > int(ptr.Deref(set.Spec.Replicas, 1)) {
		reason = "FailedDelete"
	}
	return &appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
		Reason: reason, Message: manageErr.Error(), LastTransitionTime: metav1.Now()}
}

// setFailureCondition adds cond as the ReplicaFailure condition when there is none and
// removes it when cond is nil; an existing one stays as it is (kube's calculateStatus).
// Each failure's message names the refused pod, so rewriting it would update the set on
// every failed sync, and the update queues the set again past the back-off.
func setFailureCondition(conds []appsv1.ReplicaSetCondition, cond *appsv1.ReplicaSetCondition) []appsv1.ReplicaSetCondition {
	var out []appsv1.ReplicaSetCondition
	for _, c := range conds {
		if c.Type != appsv1.ReplicaSetReplicaFailure {
			out = append(out, c)
		} else if cond != nil {
			cond = &c
		}
	}
	if cond != nil {
		out = append(out, *cond)
	}
	return out
}
