package batch

import (
	"fmt"

	"github.com/minik8s/minik8s/internal/jobutil"
	"github.com/minik8s/minik8s/pkg/control/registry"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// jobStatusUpdate is kube's check of a write through a Job's status
// (ValidateJobStatusUpdate with the options its status strategy chooses, JobManagedBy
// on): a Job controller, ours or another named by spec.managedBy, moves a Job only
// through the transitions clients expect. Most rules apply only when the fields they
// read changed, so a status that a spec update made stale can still be written.
var jobStatusUpdate = registry.SubresourceRules{Validate: func(obj, old runtime.Object) field.ErrorList {
	return validateJobStatusUpdate(obj.(*batchv1.Job), old.(*batchv1.Job))
}}

var jobStatusPath = field.NewPath("status")

func validateJobStatusUpdate(j, o *batchv1.Job) field.ErrorList {
	s, os := &j.Status, &o.Status
	path := jobStatusPath
	conditions := path.Child("conditions")
	changed := func(t batchv1.JobConditionType) bool {
		return jobutil.ConditionTrue(j, t) != jobutil.ConditionTrue(o, t)
	}
	complete, failed := jobutil.ConditionTrue(j, batchv1.JobComplete), jobutil.ConditionTrue(j, batchv1.JobFailed)
	failureTarget, criteriaMet := jobutil.ConditionTrue(j, batchv1.JobFailureTarget), jobutil.ConditionTrue(j, batchv1.JobSuccessCriteriaMet)
	finished := jobutil.Finished(j)
	finishedChanged := finished != jobutil.Finished(o)
	completeChanged, failedChanged := changed(batchv1.JobComplete), changed(batchv1.JobFailed)
	completedIndexesChanged := s.CompletedIndexes != os.CompletedIndexes
	failedIndexesChanged := !ptr.Equal(s.FailedIndexes, os.FailedIndexes)
	activeChanged := s.Active != os.Active
	startChanged := !equality.Semantic.DeepEqual(s.StartTime, os.StartTime)
	completionChanged := !equality.Semantic.DeepEqual(s.CompletionTime, os.CompletionTime)
	indexed := ptr.Deref(j.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	completions := j.Spec.Completions

	c := registry.Count32
	errs := registry.StatusCounts(path, c("active", s.Active), c("succeeded", s.Succeeded), c("failed", s.Failed))
	errs = append(errs, registry.NonNegative(s.Ready, path.Child("ready"))...)
	errs = append(errs, registry.NonNegative(s.Terminating, path.Child("terminating"))...)
	errs = append(errs, validateUncountedPods(s.UncountedTerminatedPods, path.Child("uncountedTerminatedPods"))...)
	refuse := func(when bool, message string) {
		if when {
			errs = append(errs, field.Invalid(conditions, field.OmitValueType{}, message))
		}
	}
	refuse((completeChanged || failedChanged) && complete && failed, "cannot set Complete=True and Failed=true conditions")
	refuse((completeChanged || changed(batchv1.JobFailureTarget)) && complete && failureTarget, "cannot set Complete=True and FailureTarget=true conditions")
	if (completeChanged || completionChanged) && s.CompletionTime != nil && !complete {
		errs = append(errs, field.Invalid(path.Child("completionTime"), s.CompletionTime, "cannot set completionTime when there is no Complete=True condition"))
	}
	if (completeChanged || completionChanged) && s.CompletionTime == nil && complete {
		errs = append(errs, field.Required(path.Child("completionTime"), "completionTime is required for Complete jobs"))
	}
	if (startChanged || completionChanged) && s.StartTime != nil && s.CompletionTime != nil && s.CompletionTime.Before(s.StartTime) {
		errs = append(errs, field.Invalid(path.Child("completionTime"), s.CompletionTime, "must be equal to or after `startTime`"))
	}
	refuse((failedChanged || failedIndexesChanged) && failed && !failureTarget, "cannot set Failed=True condition without the FailureTarget=true condition")
	refuse((completeChanged || changed(batchv1.JobSuccessCriteriaMet)) && complete && !criteriaMet, "cannot set Complete=True condition without the SuccessCriteriaMet=true condition")
	if (finishedChanged || activeChanged) && s.Active > 0 && finished {
		errs = append(errs, field.Invalid(path.Child("active"), s.Active, "active>0 is invalid for finished job"))
	}
	suspendedWithNoCompletions := ptr.Deref(j.Spec.Suspend, false) && ptr.Equal(completions, ptr.To[int32](0))
	if (finishedChanged || startChanged) && !suspendedWithNoCompletions && s.StartTime == nil && finished {
		errs = append(errs, field.Required(path.Child("startTime"), "startTime is required for finished job"))
	}
	uncounted := s.UncountedTerminatedPods
	if (finishedChanged || !equality.Semantic.DeepEqual(uncounted, os.UncountedTerminatedPods)) && finished && uncounted != nil && len(uncounted.Failed)+len(uncounted.Succeeded) > 0 {
		errs = append(errs, field.Invalid(path.Child("uncountedTerminatedPods"), registry.GoNamed{V: uncounted}, "must be empty for finished job"))
	}
	if completedIndexesChanged && completions != nil {
		if _, err := countIndexes(s.CompletedIndexes, *completions); err != nil {
			errs = append(errs, field.Invalid(path.Child("completedIndexes"), s.CompletedIndexes, "error parsing completedIndexes: "+err.Error()))
		}
	}
	if failedIndexesChanged && completions != nil && j.Spec.BackoffLimitPerIndex != nil && s.FailedIndexes != nil {
		if _, err := countIndexes(*s.FailedIndexes, *completions); err != nil {
			errs = append(errs, field.Invalid(path.Child("failedIndexes"), s.FailedIndexes, "error parsing failedIndexes: "+err.Error()))
		}
	}
	if completedIndexesChanged && s.CompletedIndexes != "" && !indexed {
		errs = append(errs, field.Invalid(path.Child("completedIndexes"), s.CompletedIndexes, "cannot set non-empty completedIndexes when non-indexed completion mode"))
	}
	if failedIndexesChanged && j.Spec.BackoffLimitPerIndex == nil && s.FailedIndexes != nil {
		errs = append(errs, field.Invalid(path.Child("failedIndexes"), *s.FailedIndexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
	}
	if (failedIndexesChanged || completedIndexesChanged) && completions != nil && s.FailedIndexes != nil {
		if at, overlap := indexesOverlap(s.CompletedIndexes, *s.FailedIndexes, *completions); overlap {
			errs = append(errs, field.Invalid(path.Child("failedIndexes"), *s.FailedIndexes, fmt.Sprintf("failedIndexes and completedIndexes overlap at index: %d", at)))
		}
	}
	if (finishedChanged || !ptr.Equal(s.Terminating, os.Terminating)) && ptr.Deref(s.Terminating, 0) > 0 && finished {
		errs = append(errs, field.Invalid(path.Child("terminating"), s.Terminating, "terminating>0 is invalid for finished job"))
	}
	if (activeChanged || !ptr.Equal(s.Ready, os.Ready)) && s.Ready != nil && *s.Ready > s.Active {
		errs = append(errs, field.Invalid(path.Child("ready"), *s.Ready, "cannot set more ready pods than active"))
	}
	refuse(criteriaMet && failed, "cannot set SuccessCriteriaMet=True and Failed=true conditions")
	refuse(criteriaMet && failureTarget, "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions")
	refuse(j.Spec.SuccessPolicy != nil && !criteriaMet && complete, "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True")

	// then the transitions from the stored status
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget} {
		refuse(jobutil.ConditionTrue(o, t) && !jobutil.ConditionTrue(j, t), fmt.Sprintf("cannot disable the terminal %s=True condition", t))
	}
	if s.Failed < os.Failed {
		errs = append(errs, field.Invalid(path.Child("failed"), s.Failed, "cannot decrease the failed counter"))
	}
	// an indexed Job whose completions follow its parallelism can be scaled down
	if s.Succeeded < os.Succeeded && (!indexed || !ptr.Equal(completions, j.Spec.Parallelism)) {
		errs = append(errs, field.Invalid(path.Child("succeeded"), s.Succeeded, "cannot decrease the succeeded counter"))
	}
	if s.CompletionTime != nil && os.CompletionTime != nil && !s.CompletionTime.Equal(os.CompletionTime) {
		errs = append(errs, field.Invalid(path.Child("completionTime"), s.CompletionTime, "field is immutable"))
	}
	// a Job being resumed (Suspended True to False) restarts its clock
	resuming := jobutil.ConditionTrue(o, batchv1.JobSuspended) && conditionFalse(j, batchv1.JobSuspended)
	if startChanged && !resuming && os.StartTime != nil && !ptr.Deref(j.Spec.Suspend, false) {
		errs = append(errs, field.Invalid(path.Child("startTime"), s.StartTime, "field is immutable for unsuspended job once set"))
	}
	refuse(jobutil.ConditionTrue(o, batchv1.JobSuccessCriteriaMet) && !criteriaMet, "cannot disable the SuccessCriteriaMet=True condition")
	refuse(jobutil.ConditionTrue(o, batchv1.JobComplete) && !jobutil.ConditionTrue(o, batchv1.JobSuccessCriteriaMet) && criteriaMet,
		"cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions")
	return errs
}

func conditionFalse(j *batchv1.Job, t batchv1.JobConditionType) bool {
	c := jobutil.Condition(j, t)
	return c != nil && c.Status == corev1.ConditionFalse
}

// validateUncountedPods: each uncounted pod is named, and once across both lists.
func validateUncountedPods(u *batchv1.UncountedTerminatedPods, path *field.Path) field.ErrorList {
	if u == nil {
		return nil
	}
	var errs field.ErrorList
	seen := sets.New[types.UID]()
	check := func(uids []types.UID, path *field.Path) {
		for i, uid := range uids {
			switch {
			case uid == "":
				errs = append(errs, field.Invalid(path.Index(i), uid, "must not be empty"))
			case seen.Has(uid):
				errs = append(errs, field.Duplicate(path.Index(i), uid))
			default:
				seen.Insert(uid)
			}
		}
	}
	check(u.Succeeded, path.Child("succeeded"))
	check(u.Failed, path.Child("failed"))
	return errs
}
