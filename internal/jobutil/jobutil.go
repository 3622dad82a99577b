// Package jobutil reads a Job's status conditions, as Kubernetes' pkg/controller/job/util
// does for its controllers: what the job, cronjob and ttl-after-finished controllers and
// the API server's table of Jobs share.
package jobutil

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Condition is the Job's condition of type t, nil when it has none.
func Condition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == t {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

// ConditionTrue says whether the Job has a condition of type t whose status is True.
func ConditionTrue(j *batchv1.Job, t batchv1.JobConditionType) bool {
	c := Condition(j, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// FinishedCondition is the type of the Job's Complete or Failed condition whose status is
// True, and true; "" and false while the Job runs. A finished Job changes no more.
func FinishedCondition(j *batchv1.Job) (batchv1.JobConditionType, bool) {
	if c := finishedCondition(j); c != nil {
		return c.Type, true
	}
	return "", false
}

// Finished says whether the Job is Complete or Failed.
func Finished(j *batchv1.Job) bool { return finishedCondition(j) != nil }

// FinishTime is when the Job finished: the last transition of its finished condition; not
// known if that condition has no time (kube's jobFinishTime fails then).
func FinishTime(j *batchv1.Job) (time.Time, bool) {
	if c := finishedCondition(j); c != nil && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time, true
	}
	return time.Time{}, false
}

func finishedCondition(j *batchv1.Job) *batchv1.JobCondition {
	for i, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}
