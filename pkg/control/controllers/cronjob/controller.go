// Package cronjob creates Jobs on a schedule, as kube-controller-manager's cronjob
// controller does: cron syntax and macros in a time zone, concurrencyPolicy,
// startingDeadlineSeconds, history limits and suspend.
package cronjob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Name is the controller's name in Events.
const Name = "cronjob-controller"

// ScheduledTimestampAnnotation records on a Job the start time it was created for.
const ScheduledTimestampAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"

// nextDelta is added to the wait for the next start time, so the clock has passed it.
const nextDelta = 100 * time.Millisecond

var cronJobKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Controller reconciles CronJobs with their Jobs.
type Controller struct {
	client   kubernetes.Interface
	cronJobs batchlisters.CronJobLister
	jobs     batchlisters.JobLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	clock    clock.WithTicker
	log      *slog.Logger
}

// New wires the controller to the shared CronJob and Job informers; clk tells the time and
// runs the queue's delays, so a test can move time on.
func New(client kubernetes.Interface, cronJobs batchinformers.CronJobInformer, jobs batchinformers.JobInformer, recorder record.EventRecorder, clk clock.WithTicker, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		client: client, cronJobs: cronJobs.Lister(), jobs: jobs.Lister(),
		synced:   []cache.InformerSynced{cronJobs.Informer().HasSynced, jobs.Informer().HasSynced},
		queue:    workloop.NewQueueWithClock[string]("cronjob", clk),
		recorder: recorder, clock: clk, log: log,
	}
	if _, err := cronJobs.Informer().AddEventHandler(workloop.OnEvery(workloop.Enqueue(c.queue))); err != nil {
		return nil, err
	}
	_, err := jobs.Informer().AddEventHandler(workloop.OnEvery(c.jobChanged))
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
}

func (c *Controller) jobChanged(obj any) {
	job, ok := workloop.Object[*batchv1.Job](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(job); ref != nil && ref.Kind == cronJobKind.Kind && ref.APIVersion == cronJobKind.GroupVersion().String() {
		c.queue.Add(job.Namespace + "/" + ref.Name)
	}
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	shared, found, err := workloop.Lookup(key, c.cronJobs.CronJobs)
	if !found {
		return 0, err
	}
	cj := shared.DeepCopy()
	all, err := c.jobs.Jobs(cj.Namespace).List(labels.Everything())
	if err != nil {
		return 0, err
	}
	jobs := controllerref.Controlled(all, cj.UID)
	if cj, err = c.trackActive(ctx, cj, jobs); err != nil {
		return 0, err
	}
	again, err := c.schedule(ctx, cj)
	if err != nil {
		return 0, err
	}
	if !apiequality.Semantic.DeepEqual(shared.Status, cj.Status) {
		if err := c.updateStatus(ctx, cj); err != nil {
			return 0, fmt.Errorf("update status of cronjob %s: %w", key, err)
		}
	}
	if err := c.cleanupHistory(ctx, cj, jobs); err != nil {
		return 0, err
	}
	return again, nil
}

// updateStatus writes the status this sync worked out. On a conflict (the CronJob was
// annotated or edited meanwhile) it writes the same status onto the fresh object: this
// worker is the only writer of status, and a Job it just started must reach status.active,
// or a later Replace would not delete it and a Forbid schedule would not wait for it.
func (c *Controller) updateStatus(ctx context.Context, cj *batchv1.CronJob) error {
	cronJobs := c.client.BatchV1().CronJobs(cj.Namespace)
	_, err := cronJobs.UpdateStatus(ctx, cj, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh, err := cronJobs.Get(ctx, cj.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && fresh.UID != cj.UID {
			return nil // deleted (and perhaps made again): the status was of the old one
		}
		if err != nil {
			return err
		}
		fresh.Status = cj.Status
		_, err = cronJobs.UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
		return err
	})
}

// trackActive brings status.active and lastSuccessfulTime up to date with the Jobs, and
// returns the CronJob it worked on (a fresh read of it, where the cached one was stale).
// A running Job of the CronJob's that status.active does not name (one made with kubectl
// create job --from=cronjob/X) is reported, not adopted into status.active, as in
// Kubernetes' syncCronJob: it neither blocks a Forbid schedule nor is replaced.
func (c *Controller) trackActive(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) (*batchv1.CronJob, error) {
	byUID := map[string]*batchv1.Job{}
	for _, j := range jobs {
		byUID[string(j.UID)] = j
		inActive := func(cj *batchv1.CronJob) bool {
			return slices.ContainsFunc(cj.Status.Active, func(r corev1.ObjectReference) bool { return r.UID == j.UID })
		}
		active := inActive(cj)
		condition, done := jobutil.FinishedCondition(j)
		if !done && !active && j.DeletionTimestamp == nil {
			// The cache may not hold the status that named the Job yet: read it again.
			fresh, err := c.client.BatchV1().CronJobs(cj.Namespace).Get(ctx, cj.Name, metav1.GetOptions{})
			if err != nil {
				return cj, err
			}
			if inActive(fresh) {
				cj = fresh
				continue
			}
			c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
		}
		switch {
		case done && active:
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, condition)
		}
		if condition == batchv1.JobComplete && j.Status.CompletionTime != nil {
			if last := cj.Status.LastSuccessfulTime; last == nil || last.Before(j.Status.CompletionTime) {
				cj.Status.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
			}
		}
	}
	var gone []types.UID
	for _, r := range cj.Status.Active {
		if _, ok := byUID[string(r.UID)]; ok {
			continue
		}
		// The cache may lag behind the Job's creation: only the API says it is gone.
		_, err := c.client.BatchV1().Jobs(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", r.Name)
			gone = append(gone, r.UID)
		case err != nil:
			return cj, err
		}
	}
	cj.Status.Active = slices.DeleteFunc(cj.Status.Active, func(r corev1.ObjectReference) bool {
		j, ok := byUID[string(r.UID)]
		return slices.Contains(gone, r.UID) || ok && jobutil.Finished(j)
	})
	if len(cj.Status.Active) == 0 {
		cj.Status.Active = nil
	}
	return cj, nil
}

// schedule starts the Job due now, if any, and says how long until the next start time.
func (c *Controller) schedule(ctx context.Context, cj *batchv1.CronJob) (time.Duration, error) {
	if cj.DeletionTimestamp != nil {
		return 0, nil
	}
	sched, loc, err := schedule(cj)
	if err != nil {
		reason := "UnparseableSchedule"
		if errors.Is(err, errTimeZone) {
			reason = "UnknownTimeZone"
		}
		c.recorder.Event(cj, corev1.EventTypeWarning, reason, err.Error())
		return 0, nil // no retry: an update of the spec wakes the CronJob
	}
	if ptr.Deref(cj.Spec.Suspend, false) {
		return 0, nil
	}
	now := c.clock.Now()
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		earliest = latest(earliest, now.Add(-time.Duration(*d)*time.Second))
	}
	scheduled, missed, err := mostRecent(sched, loc, earliest, now)
	if err != nil {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "InvalidSchedule", "invalid schedule: %s : %s", cj.Spec.Schedule, err)
		return 0, nil // as for an unparseable schedule, an update of the spec wakes it
	}
	next := sched.Next(now.In(loc)).Sub(now) + nextDelta
	if scheduled.IsZero() {
		return next, nil
	}
	if missed > tooManyMissed {
		c.recorder.Event(cj, corev1.EventTypeWarning, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return next, nil
	}
	name := jobName(cj, scheduled)
	if slices.ContainsFunc(cj.Status.Active, func(r corev1.ObjectReference) bool { return r.Name == name }) {
		return next, nil // already started and recorded
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			c.recorder.Event(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return next, nil
		}
	case batchv1.ReplaceConcurrent:
		for _, ref := range cj.Status.Active {
			if err := c.deleteJob(ctx, cj, ref.Name); err != nil {
				return 0, err
			}
		}
		cj.Status.Active = nil
	}
	job, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, newJob(cj, name, scheduled, loc), metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		existing, getErr := c.client.BatchV1().Jobs(cj.Namespace).Get(ctx, name, metav1.GetOptions{})
		if getErr != nil {
			return 0, getErr
		}
		if !metav1.IsControlledBy(existing, cj) {
			return next, nil // someone else's Job of that name: never adopt it
		}
		// Ours, started by a sync whose status update was lost: record it again.
		job = existing
	case err != nil:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return 0, fmt.Errorf("create job %s/%s: %w", cj.Namespace, name, err)
	default:
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", job.Name)
	}
	cj.Status.Active = append(cj.Status.Active, jobRef(job))
	cj.Status.LastScheduleTime = &metav1.Time{Time: scheduled}
	return next, nil
}

// jobRef is how status.active names a Job.
func jobRef(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Job", APIVersion: batchv1.SchemeGroupVersion.String(), Namespace: j.Namespace, Name: j.Name, UID: j.UID, ResourceVersion: j.ResourceVersion}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// newJob is the Job of one start time, from the CronJob's template. Its scheduled-timestamp
// annotation is in the CronJob's time zone, or in UTC (not the controller's zone, loc) when
// it names none, as Kubernetes writes it.
func newJob(cj *batchv1.CronJob, name string, scheduled time.Time, loc *time.Location) *batchv1.Job {
	t := &cj.Spec.JobTemplate
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: cj.Namespace,
			Labels:          copyMap(t.Labels),
			Annotations:     copyMap(t.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, cronJobKind)},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	stamp := scheduled.UTC()
	if cj.Spec.TimeZone != nil {
		stamp = scheduled.In(loc)
	}
	job.Annotations[ScheduledTimestampAnnotation] = stamp.Format(time.RFC3339)
	return job
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// cleanupHistory deletes the oldest finished Jobs beyond the history limits.
func (c *Controller) cleanupHistory(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) error {
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		if j.DeletionTimestamp != nil {
			continue
		}
		switch condition, _ := jobutil.FinishedCondition(j); condition {
		case batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	var errs []error
	for _, set := range []struct {
		jobs  []*batchv1.Job
		limit *int32
	}{{succeeded, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if set.limit == nil || len(set.jobs) <= int(*set.limit) {
			continue
		}
		slices.SortFunc(set.jobs, byStartTime)
		for _, j := range set.jobs[:len(set.jobs)-int(*set.limit)] {
			errs = append(errs, c.deleteJob(ctx, cj, j.Name))
		}
	}
	return errors.Join(errs...)
}

// byStartTime orders Jobs oldest first as kube-controller-manager's byJobStartTime does:
// by start time, a Job not started yet last, equal times (whole seconds in the API) by name,
// which for a CronJob's Jobs is their scheduled minute. Without the tie-break the newest of
// two Jobs started in one second could be the one deleted.
func byStartTime(a, b *batchv1.Job) int {
	switch as, bs := a.Status.StartTime, b.Status.StartTime; {
	case as == nil && bs == nil:
	case as == nil:
		return 1
	case bs == nil:
		return -1
	case !as.Equal(bs):
		return as.Time.Compare(bs.Time)
	}
	return strings.Compare(a.Name, b.Name)
}

// deleteJob deletes a Job and, in the background, its pods.
func (c *Controller) deleteJob(ctx context.Context, cj *batchv1.CronJob, name string) error {
	err := c.client.BatchV1().Jobs(cj.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		return fmt.Errorf("delete job %s/%s: %w", cj.Namespace, name, err)
	}
	c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", name)
	return nil
}
