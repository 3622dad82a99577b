package jobutil

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func job(conds ...batchv1.JobCondition) *batchv1.Job {
	return &batchv1.Job{Status: batchv1.JobStatus{Conditions: conds}}
}

func cond(t batchv1.JobConditionType, s corev1.ConditionStatus) batchv1.JobCondition {
	return batchv1.JobCondition{Type: t, Status: s}
}

func TestConditions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		job       *batchv1.Job
		finished  batchv1.JobConditionType // "": not finished
		suspended bool
	}{
		{name: "no conditions", job: job()},
		{name: "suspended", job: job(cond(batchv1.JobSuspended, corev1.ConditionTrue)), suspended: true},
		{name: "suspension lifted", job: job(cond(batchv1.JobSuspended, corev1.ConditionFalse))},
		{name: "failure target only", job: job(cond(batchv1.JobFailureTarget, corev1.ConditionTrue))},
		{name: "complete", job: job(cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue), cond(batchv1.JobComplete, corev1.ConditionTrue)), finished: batchv1.JobComplete},
		{name: "failed", job: job(cond(batchv1.JobFailureTarget, corev1.ConditionTrue), cond(batchv1.JobFailed, corev1.ConditionTrue)), finished: batchv1.JobFailed},
		{name: "complete but not true", job: job(cond(batchv1.JobComplete, corev1.ConditionFalse))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, done := FinishedCondition(tc.job); got != tc.finished || done != (tc.finished != "") {
				t.Errorf("FinishedCondition = %q, %v; want %q", got, done, tc.finished)
			}
			if Finished(tc.job) != (tc.finished != "") {
				t.Errorf("Finished = %v, want %v", Finished(tc.job), tc.finished != "")
			}
			if ConditionTrue(tc.job, batchv1.JobSuspended) != tc.suspended {
				t.Errorf("ConditionTrue(Suspended) = %v, want %v", !tc.suspended, tc.suspended)
			}
		})
	}
}

func TestFinishTime(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	j := job(cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue), cond(batchv1.JobComplete, corev1.ConditionTrue))
	j.Status.Conditions[1].LastTransitionTime = at
	if got, done := FinishTime(j); !done || !got.Equal(at.Time) {
		t.Errorf("FinishTime = %v, %v; want %v, true", got, done, at.Time)
	}
	if got, done := FinishTime(job()); done || !got.IsZero() {
		t.Errorf("FinishTime of a running Job = %v, %v; want zero, false", got, done)
	}
}

func TestConditionPointsIntoTheJob(t *testing.T) {
	j := job(cond(batchv1.JobSuspended, corev1.ConditionTrue))
	Condition(j, batchv1.JobSuspended).Status = corev1.ConditionFalse
	if j.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Error("setting the status through Condition did not change the Job")
	}
	if Condition(j, batchv1.JobComplete) != nil {
		t.Error("Condition(Complete) of a Job without one is not nil")
	}
}
