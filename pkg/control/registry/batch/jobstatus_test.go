package batch

import (
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// A write through a Job's status is checked as kube-apiserver v1.36.3 checks it (its
// answers to the same patches, by the real kubectl, in its words and order).
func TestJobStatusUpdateValidation(t *testing.T) {
	rules, ok := JobRules.SubresourceUpdates["status"]
	if !ok {
		t.Fatal("Job has no status rules")
	}
	day := func(d int) *metav1.Time { return &metav1.Time{Time: time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC)} }
	cond := func(types ...batchv1.JobConditionType) []batchv1.JobCondition {
		var out []batchv1.JobCondition
		for _, ty := range types {
			out = append(out, batchv1.JobCondition{Type: ty, Status: corev1.ConditionTrue})
		}
		return out
	}
	indexed := func(j *batchv1.Job) {
		j.Spec.CompletionMode, j.Spec.Completions, j.Spec.Parallelism = ptr.To(batchv1.IndexedCompletion), ptr.To[int32](5), ptr.To[int32](2)
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	}
	complete := func(j *batchv1.Job) {
		j.Status = batchv1.JobStatus{StartTime: day(1), CompletionTime: day(2), Succeeded: 1, Conditions: cond(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete)}
	}
	for name, tc := range map[string]struct {
		old, set func(*batchv1.Job)
		want     []string
	}{
		"negative counts": {set: func(j *batchv1.Job) {
			j.Status.Active, j.Status.Succeeded, j.Status.Failed, j.Status.Ready, j.Status.Terminating = -1, -2, -1, ptr.To[int32](-1), ptr.To[int32](-1)
		}, want: []string{
			"status.active: Invalid value: -1: must be greater than or equal to 0",
			"status.succeeded: Invalid value: -2: must be greater than or equal to 0",
			"status.failed: Invalid value: -1: must be greater than or equal to 0",
			"status.ready: Invalid value: -1: must be greater than or equal to 0",
			"status.terminating: Invalid value: -1: must be greater than or equal to 0",
			"status.failed: Invalid value: -1: cannot decrease the failed counter",
			"status.succeeded: Invalid value: -2: cannot decrease the succeeded counter",
		}},
		"uncounted pods": {set: func(j *batchv1.Job) {
			j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"", "a"}, Failed: []types.UID{"a"}}
		}, want: []string{
			`status.uncountedTerminatedPods.succeeded[0]: Invalid value: "": must not be empty`,
			`status.uncountedTerminatedPods.failed[0]: Duplicate value: "a"`,
		}},
		"Complete alone": {set: func(j *batchv1.Job) { j.Status.Conditions = cond(batchv1.JobComplete) }, want: []string{
			"status.completionTime: Required value: completionTime is required for Complete jobs",
			"status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
			"status.startTime: Required value: startTime is required for finished job",
		}},
		"Failed with pods": {set: func(j *batchv1.Job) {
			j.Status.Conditions, j.Status.Active, j.Status.Terminating = cond(batchv1.JobFailed), 1, ptr.To[int32](1)
		}, want: []string{
			"status.conditions: Invalid value: cannot set Failed=True condition without the FailureTarget=true condition",
			"status.active: Invalid value: 1: active>0 is invalid for finished job",
			"status.startTime: Required value: startTime is required for finished job",
			"status.terminating: Invalid value: 1: terminating>0 is invalid for finished job",
		}},
		"completion before start": {set: func(j *batchv1.Job) { j.Status.CompletionTime, j.Status.StartTime = day(1), day(2) }, want: []string{
			`status.completionTime: Invalid value: "2026-01-01T00:00:00Z": cannot set completionTime when there is no Complete=True condition`,
			"status.completionTime: Invalid value: \"2026-01-01T00:00:00Z\": must be equal to or after `startTime`",
		}},
		"indexes of a NonIndexed Job": {set: func(j *batchv1.Job) { j.Status.CompletedIndexes, j.Status.FailedIndexes = "0", ptr.To("0") }, want: []string{
			`status.completedIndexes: Invalid value: "0": cannot set non-empty completedIndexes when non-indexed completion mode`,
			`status.failedIndexes: Invalid value: "0": cannot set non-null failedIndexes when backoffLimitPerIndex is null`,
			`status.failedIndexes: Invalid value: "0": failedIndexes and completedIndexes overlap at index: 0`,
		}},
		"more ready than active": {set: func(j *batchv1.Job) { j.Status.Ready, j.Status.Active = ptr.To[int32](2), 1 },
			want: []string{"status.ready: Invalid value: 2: cannot set more ready pods than active"}},
		"overlapping indexes": {old: indexed, set: func(j *batchv1.Job) { j.Status.CompletedIndexes, j.Status.FailedIndexes = "0-2", ptr.To("2-3") },
			want: []string{`status.failedIndexes: Invalid value: "2-3": failedIndexes and completedIndexes overlap at index: 2`}},
		"malformed indexes": {old: indexed, set: func(j *batchv1.Job) { j.Status.CompletedIndexes, j.Status.FailedIndexes = "0,7", ptr.To("1-1") }, want: []string{
			`status.completedIndexes: Invalid value: "0,7": error parsing completedIndexes: too large index: "7"`,
			`status.failedIndexes: Invalid value: "1-1": error parsing failedIndexes: non-increasing order, previous: 1, current: 1`,
		}},
		"completing": {set: complete},
		"uncounted pods of a finished Job": {old: complete, set: func(j *batchv1.Job) {
			j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Failed: []types.UID{"x"}}
		}, want: []string{`status.uncountedTerminatedPods: Invalid value: {"Succeeded":null,"Failed":["x"]}: must be empty for finished job`}},
		"undoing a completion": {old: complete, set: func(j *batchv1.Job) {
			j.Status = batchv1.JobStatus{StartTime: day(3), CompletionTime: day(4), Conditions: cond(batchv1.JobFailed)}
		}, want: []string{
			`status.completionTime: Invalid value: "2026-01-04T00:00:00Z": cannot set completionTime when there is no Complete=True condition`,
			"status.conditions: Invalid value: cannot set Failed=True condition without the FailureTarget=true condition",
			"status.conditions: Invalid value: cannot disable the terminal Complete=True condition",
			"status.succeeded: Invalid value: 0: cannot decrease the succeeded counter",
			`status.completionTime: Invalid value: "2026-01-04T00:00:00Z": field is immutable`,
			`status.startTime: Invalid value: "2026-01-03T00:00:00Z": field is immutable for unsuspended job once set`,
			"status.conditions: Invalid value: cannot disable the SuccessCriteriaMet=True condition",
		}},
	} {
		old := job()
		if errs := registrytest.CreateSteps(JobRules, old); len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
		if tc.old != nil {
			tc.old(old)
		}
		j := old.DeepCopy()
		tc.set(j)
		registrytest.ExpectMessages(t, name, rules.Validate(j, old), tc.want...)
	}
}
