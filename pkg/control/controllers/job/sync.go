package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllerref"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	"github.com/minik8s/minik8s/internal/jobutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	endpointsliceutil "k8s.io/endpointslice/util"
	"k8s.io/utils/ptr"
)

// syncCtx is one look at a Job: its pods and what they count for.
type syncCtx struct {
	job         *batchv1.Job
	st          *jobState
	pods        []*corev1.Pod
	indexed     bool
	perIndex    bool // Indexed with backoffLimitPerIndex
	suspended   bool
	completions int
	completed   map[int]bool        // Indexed: the indexes that succeeded
	failed      map[int]bool        // perIndex: the indexes that failed for good
	lastFailed  map[int]*corev1.Pod // perIndex: the last failed pod of each index to retry
	active      []*corev1.Pod
	now         metav1.Time
}

func (s *syncCtx) activeCount() int { return len(s.active) + len(s.st.creating) }

// podFailure says whether a pod's end is a failure of the Job: not one that the suspension
// deleted.
func (s *syncCtx) podFailure(p *corev1.Pod) bool {
	return podFailed(p, s.job) && (!s.suspended || p.Status.Phase == corev1.PodFailed)
}

// finishing says whether the Job has failed or succeeded, and waits for its pods to go.
func (s *syncCtx) finishing() bool {
	return jobutil.ConditionTrue(s.job, batchv1.JobFailureTarget) || jobutil.ConditionTrue(s.job, batchv1.JobSuccessCriteriaMet)
}

// managedElsewhere is a Job whose spec.managedBy names another controller, which Kubernetes'
// job controller leaves alone.
func managedElsewhere(job *batchv1.Job) bool {
	return job.Spec.ManagedBy != nil && *job.Spec.ManagedBy != batchv1.JobControllerName
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	shared, found, err := workloop.Lookup(key, c.jobs.Jobs)
	if err != nil {
		return 0, err
	}
	if !found || managedElsewhere(shared) {
		c.forget(key)
		return 0, nil
	}
	all, err := c.pods.Pods(shared.Namespace).List(labels.Everything())
	if err != nil {
		return 0, err
	}
	if jobutil.Finished(shared) || shared.DeletionTimestamp != nil {
		// Nothing more to count, start or adopt: a Job being deleted leaves its pods to the
		// garbage collector, without finalizers that would hold them.
		return 0, c.releaseAll(ctx, controllerref.Controlled(all, shared.UID))
	}
	pods, err := c.claimPods(ctx, shared, all)
	if err != nil {
		return 0, err
	}
	s := &syncCtx{job: shared.DeepCopy(), st: c.state(key, shared.UID), pods: pods, now: metav1.NewTime(c.clock.Now())}
	s.indexed = ptr.Deref(s.job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	s.completions = int(ptr.Deref(s.job.Spec.Completions, 0))
	s.completed = parseIndexes(s.job.Status.CompletedIndexes, s.completions)
	s.perIndex = s.indexed && s.job.Spec.BackoffLimitPerIndex != nil
	s.suspended = ptr.Deref(s.job.Spec.Suspend, false)
	if s.perIndex {
		s.failed = parseIndexes(ptr.Deref(s.job.Status.FailedIndexes, ""), s.completions)
	}
	s.st.prune(pods, s.now.Time)

	if err := c.countFinished(ctx, s); err != nil {
		return 0, err
	}
	for _, p := range pods {
		if podActive(p) {
			if _, deleting := s.st.deleting[p.Name]; !deleting {
				s.active = append(s.active, p)
			}
		}
	}
	suspended := s.suspended
	st := &s.job.Status
	// The Suspended and Resumed events follow the status that records them, so a sync on a
	// stale Job whose update conflicts sends none.
	var suspendEvent string
	if !suspended && jobutil.ConditionTrue(s.job, batchv1.JobSuspended) {
		setCondition(s.job, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", s.now)
		st.StartTime = &s.now // a resumed Job's deadline counts from now
		suspendEvent = "Resumed"
	}
	if !suspended && st.StartTime == nil {
		st.StartTime = &s.now
	}

	var again time.Duration
	c.judge(s, suspended, &again)
	var final *batchv1.JobCondition
	// A pod the API refused to create or delete is retried after the status is written,
	// as kube's syncJob returns manageJob's error last.
	var manageErr error
	switch {
	case s.finishing():
		final, manageErr = c.finish(ctx, s)
	case suspended:
		manageErr = c.deletePods(ctx, s, s.active)
		if !jobutil.ConditionTrue(s.job, batchv1.JobSuspended) {
			setCondition(s.job, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", s.now)
			// As Kubernetes 1.36 (MutableSchedulingDirectivesForSuspendedJobs, on by
			// default): a suspended Job has not started; resuming starts it anew.
			st.StartTime = nil
			suspendEvent = "Suspended"
		}
	default:
		var wait time.Duration
		if wait, manageErr = c.managePods(ctx, s); wait > 0 && (again == 0 || wait < again) {
			again = wait
		}
	}

	ready := int32(0)
	terminating := int32(0)
	for _, p := range s.active {
		if endpointsliceutil.IsPodReady(p) {
			ready++
		}
	}
	for _, p := range pods {
		if podTerminating(p) {
			terminating++
		}
	}
	st.Active = int32(s.activeCount())
	st.Ready = &ready
	st.Terminating = &terminating
	if s.indexed {
		st.CompletedIndexes = formatIndexes(s.completed)
		st.Succeeded = int32(len(s.completed))
	}
	if s.perIndex {
		st.FailedIndexes = ptr.To(formatIndexes(s.failed))
	}
	if apiequality.Semantic.DeepEqual(shared.Status, s.job.Status) {
		return again, manageErr
	}
	if _, err := c.client.BatchV1().Jobs(shared.Namespace).UpdateStatus(ctx, s.job, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("update status of job %s: %w", key, err)
	}
	switch suspendEvent {
	case "Suspended":
		c.recorder.Event(s.job, corev1.EventTypeNormal, "Suspended", "Job suspended")
	case "Resumed":
		c.recorder.Event(s.job, corev1.EventTypeNormal, "Resumed", "Job resumed")
	}
	if final != nil {
		c.recordFinished(s.job, final)
	}
	return again, manageErr
}

// recordFinished sends the Events of a Job that has just finished, as Kubernetes'
// recordJobFinished: a warning first when more pods succeeded than the completions asked.
func (c *Controller) recordFinished(job *batchv1.Job, final *batchv1.JobCondition) {
	if final.Type != batchv1.JobComplete {
		c.recorder.Event(job, corev1.EventTypeWarning, final.Reason, final.Message)
		return
	}
	if completions := job.Spec.Completions; completions != nil && job.Status.Succeeded > *completions {
		c.recorder.Event(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
	}
	c.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
}

// countFinished moves every newly finished pod into the Job's counts exactly once: its uid
// is first written to status.uncountedTerminatedPods, then its finalizer goes, then the
// counters take it. A crash between the steps finds the uid recorded and finishes the move.
func (c *Controller) countFinished(ctx context.Context, s *syncCtx) error {
	job := s.job
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	unc := job.Status.UncountedTerminatedPods
	byUID := map[types.UID]*corev1.Pod{}
	var release, succeeded, failed []*corev1.Pod
	if s.perIndex {
		s.markFailedIndexes()
		s.lastFailed = s.lastFailedPods()
		job.Status.FailedIndexes = ptr.To(formatIndexes(s.failed))
	}
	if msg := s.failJobMessage(); msg != "" {
		setCondition(job, batchv1.JobFailureTarget, corev1.ConditionTrue, reasonPodFailurePolicy, msg, s.now)
	}
	failing := jobutil.ConditionTrue(job, batchv1.JobFailureTarget)
	for _, p := range s.pods {
		byUID[p.UID] = p
		if _, done := s.st.finalized[p.UID]; done || !hasTrackingFinalizer(p) {
			continue
		}
		if slices.Contains(unc.Succeeded, p.UID) || slices.Contains(unc.Failed, p.UID) {
			release = append(release, p)
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			unc.Succeeded = append(unc.Succeeded, p.UID)
			succeeded = append(succeeded, p)
		case s.awaitsReplacement(p):
			continue
		case podFailed(p, job) || failing:
			// A Job that failed counts all its pods that did not succeed as failed, running
			// or not, as kube's: it deletes them and waits only for them to go.
			action, _ := matchFailurePolicy(job.Spec.PodFailurePolicy, p)
			switch {
			case action != nil && *action == batchv1.PodFailurePolicyActionIgnore:
			case !failing && !s.podFailure(p): // deleted by the suspension, not a failure
			default:
				unc.Failed = append(unc.Failed, p.UID)
				failed = append(failed, p)
			}
		case s.finishing(): // succeeded: the pods it deletes count for nothing
		default:
			continue // still running, or deleted with a phase the Job waits for
		}
		release = append(release, p)
	}
	s.st.recordFinished(succeeded, failed)
	if len(unc.Succeeded)+len(unc.Failed) > 0 { // with the indexes these pods failed
		updated, err := c.client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("record finished pods of job %s/%s: %w", job.Namespace, job.Name, err)
		}
		job.ResourceVersion = updated.ResourceVersion
	}
	var errs []error
	for _, p := range release {
		if err := c.removeFinalizer(ctx, p); err != nil {
			errs = append(errs, err)
			continue
		}
		s.st.finalized[p.UID] = struct{}{}
	}
	if err := errors.Join(errs...); err != nil {
		return err // the uids stay recorded; the next sync finishes the move
	}
	for _, uid := range unc.Succeeded {
		job.Status.Succeeded++
		if p := byUID[uid]; p != nil && s.indexed {
			if i := podIndex(p, s.completions); i >= 0 {
				s.completed[i] = true
			}
		}
	}
	job.Status.Failed += int32(len(unc.Failed))
	unc.Succeeded, unc.Failed = nil, nil
	return nil
}

// failJobMessage is why a failed pod fails the Job by a FailJob rule of its
// podFailurePolicy, if one does and the Job has not already failed or succeeded. As kube's
// syncJob, it looks at every failed pod before anything else, so an index's retry is not
// waited for.
func (s *syncCtx) failJobMessage() string {
	if s.finishing() {
		return ""
	}
	for _, p := range s.pods {
		if !podFailed(p, s.job) {
			continue
		}
		if action, msg := matchFailurePolicy(s.job.Spec.PodFailurePolicy, p); action != nil && *action == batchv1.PodFailurePolicyActionFailJob {
			return msg
		}
	}
	return ""
}

// judge decides whether the Job has failed or succeeded, setting FailureTarget or
// SuccessCriteriaMet; the terminal condition follows once its pods are gone. again is set to
// when the active deadline runs out.
func (c *Controller) judge(s *syncCtx, suspended bool, again *time.Duration) {
	job := s.job
	if s.finishing() {
		return
	}
	if job.Status.Failed > ptr.Deref(job.Spec.BackoffLimit, 6) || c.pastBackoffLimitOnFailure(s) {
		setCondition(job, batchv1.JobFailureTarget, corev1.ConditionTrue, reasonBackoffLimitExceeded, msgBackoffLimitExceeded, s.now)
		return
	}
	if ads := job.Spec.ActiveDeadlineSeconds; ads != nil && !suspended && job.Status.StartTime != nil {
		left := job.Status.StartTime.Add(time.Duration(*ads) * time.Second).Sub(s.now.Time)
		if left <= 0 {
			setCondition(job, batchv1.JobFailureTarget, corev1.ConditionTrue, reasonDeadlineExceeded, msgDeadlineExceeded, s.now)
			return
		}
		*again = left
	}
	if s.perIndex {
		if m := job.Spec.MaxFailedIndexes; m != nil && len(s.failed) > int(*m) {
			setCondition(job, batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexesExceeded, s.now)
			return
		}
		if len(s.failed) > 0 && len(s.failed)+len(s.completed) >= s.completions {
			setCondition(job, batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonFailedIndexes, msgFailedIndexes, s.now)
			return
		}
	}
	if msg, met := matchSuccessPolicy(job.Spec.SuccessPolicy, s.completions, s.completed); s.indexed && met {
		setCondition(job, batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batchv1.JobReasonSuccessPolicy, msg, s.now)
		return
	}
	succeeded := int(job.Status.Succeeded)
	var done bool
	switch {
	case s.indexed:
		done = len(s.completed) >= s.completions
	case job.Spec.Completions != nil:
		done = succeeded >= s.completions
	default:
		done = succeeded > 0 && s.activeCount() == 0
	}
	if done {
		setCondition(job, batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, reasonCompletionsReached, msgCompletionsReached, s.now)
	}
}

// pastBackoffLimitOnFailure counts the container restarts of active pods against
// backoffLimit when containers restart in place.
func (c *Controller) pastBackoffLimitOnFailure(s *syncCtx) bool {
	if s.job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var n int32
	for _, p := range s.active {
		if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodPending {
			n += restarts(p)
		}
	}
	limit := ptr.Deref(s.job.Spec.BackoffLimit, 6)
	if limit == 0 {
		return n > 0
	}
	return n >= limit
}

// finish deletes what still runs of a Job that failed or succeeded, and once no pod of it
// is left running or terminating, sets Failed or Complete; it returns that condition, and
// the first deletion the API refused.
func (c *Controller) finish(ctx context.Context, s *syncCtx) (*batchv1.JobCondition, error) {
	idle := s.activeCount() == 0
	for _, p := range s.pods {
		if _, counted := s.st.finalized[p.UID]; podTerminating(p) || (hasTrackingFinalizer(p) && !counted) {
			idle = false // running, or finished but not counted yet: the next sync counts it
		}
	}
	if !idle {
		return nil, c.deletePods(ctx, s, s.active)
	}
	if t := jobutil.Condition(s.job, batchv1.JobFailureTarget); t != nil && t.Status == corev1.ConditionTrue {
		setCondition(s.job, batchv1.JobFailed, corev1.ConditionTrue, t.Reason, t.Message, s.now)
		return jobutil.Condition(s.job, batchv1.JobFailed), nil
	}
	met := jobutil.Condition(s.job, batchv1.JobSuccessCriteriaMet)
	setCondition(s.job, batchv1.JobComplete, corev1.ConditionTrue, met.Reason, met.Message, s.now)
	s.job.Status.CompletionTime = &s.now
	return jobutil.Condition(s.job, batchv1.JobComplete), nil
}

// releaseAll removes our finalizer from the pods of a finished Job.
func (c *Controller) releaseAll(ctx context.Context, pods []*corev1.Pod) error {
	var errs []error
	for _, p := range pods {
		if hasTrackingFinalizer(p) {
			errs = append(errs, c.removeFinalizer(ctx, p))
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) removeFinalizer(ctx context.Context, pod *corev1.Pod) error {
	patch := fmt.Appendf(nil, `{"metadata":{"$deleteFromPrimitiveList/finalizers":[%q]}}`, batchv1.JobTrackingFinalizer)
	_, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove the job-tracking finalizer of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
