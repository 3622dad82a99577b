// Package cronjob creates Jobs on a schedule as kube-controller-manager's cronjob
// controller (v2) does: cron syntax and @hourly-style macros with timeZone, the
// concurrency policy, startingDeadlineSeconds, history limits and suspend.
package cronjob

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controllers/workloop"
	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// scheduledTimestampAnnotation records on a Job the schedule time it was made for.
const scheduledTimestampAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"

var kind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Controller is the cronjob controller.
type Controller struct {
	client   kubernetes.Interface
	cronJobs batchlisters.CronJobLister
	jobs     batchlisters.JobLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	clock    clock.PassiveClock
	log      *slog.Logger
}

// New wires the controller to the shared informers; clk tells the time of schedules.
func New(client kubernetes.Interface, cronJobs batchinformers.CronJobInformer, jobs batchinformers.JobInformer,
	recorder record.EventRecorder, clk clock.PassiveClock, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		client: client, cronJobs: cronJobs.Lister(), jobs: jobs.Lister(),
		synced: []cache.InformerSynced{cronJobs.Informer().HasSynced, jobs.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "cronjob"}),
		recorder: recorder, clock: clk, log: log,
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := cronJobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}); err != nil {
		return nil, err
	}
	onJob := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if j, ok := obj.(*batchv1.Job); ok {
			if ref := metav1.GetControllerOf(j); ref != nil && ref.Kind == kind.Kind {
				c.queue.Add(j.Namespace + "/" + ref.Name)
			}
		}
	}
	_, err := jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onJob, UpdateFunc: func(_, obj any) { onJob(obj) }, DeleteFunc: onJob,
	})
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	for range 3 {
		go workloop.Run(ctx, c.queue, c.log, c.sync)
	}
	<-ctx.Done()
}

// schedule parses the CronJob's schedule in its time zone.
func schedule(cj *batchv1.CronJob) (cron.Schedule, error) {
	spec := cj.Spec.Schedule
	if tz := ptr.Deref(cj.Spec.TimeZone, ""); tz != "" {
		if _, err := time.LoadLocation(tz); err != nil {
			return nil, fmt.Errorf("unknown time zone %q: %w", tz, err)
		}
		spec = "CRON_TZ=" + tz + " " + spec
	}
	return cron.ParseStandard(spec)
}

// sync keeps the CronJob's status, removes old Jobs beyond the history limits, starts the
// Job of the latest schedule time that is due, and asks to look again at the next one.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	cached, err := c.cronJobs.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil || cached.DeletionTimestamp != nil {
		return 0, err
	}
	cj := cached.DeepCopy()
	all, err := c.jobs.Jobs(ns).List(labels.Everything())
	if err != nil {
		return 0, err
	}
	var owned []*batchv1.Job
	for _, j := range all {
		if ref := metav1.GetControllerOf(j); ref != nil && ref.UID == cj.UID {
			owned = append(owned, j)
		}
	}
	active := c.trackJobs(cj, owned)
	if err := c.cleanupHistory(ctx, cj, owned); err != nil {
		return 0, err
	}
	again, err := c.startDue(ctx, cj, active, owned)
	if !equality.Semantic.DeepEqual(cj.Status, cached.Status) {
		// A conflict (our cache was behind) retries the whole sync on fresh objects.
		if _, uerr := c.client.BatchV1().CronJobs(ns).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); uerr != nil && !apierrors.IsNotFound(uerr) {
			return 0, uerr
		}
	}
	return again, err
}

func jobFinished(j *batchv1.Job) (bool, batchv1.JobConditionType) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c.Type
		}
	}
	return false, ""
}

// trackJobs rebuilds status.active from the owned Jobs still running and notes finished ones.
func (c *Controller) trackJobs(cj *batchv1.CronJob, owned []*batchv1.Job) []*batchv1.Job {
	wasActive := map[string]bool{}
	for _, ref := range cj.Status.Active {
		wasActive[string(ref.UID)] = true
	}
	var active []*batchv1.Job
	cj.Status.Active = nil
	for _, j := range owned {
		done, how := jobFinished(j)
		if !done {
			active = append(active, j)
			cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{Kind: "Job", Namespace: j.Namespace, Name: j.Name,
				UID: j.UID, APIVersion: "batch/v1", ResourceVersion: j.ResourceVersion})
			continue
		}
		if wasActive[string(j.UID)] {
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, how)
		}
		if how == batchv1.JobComplete && j.Status.CompletionTime != nil &&
			(cj.Status.LastSuccessfulTime == nil || j.Status.CompletionTime.After(cj.Status.LastSuccessfulTime.Time)) {
			cj.Status.LastSuccessfulTime = j.Status.CompletionTime
		}
	}
	sort.Slice(cj.Status.Active, func(i, k int) bool { return cj.Status.Active[i].Name < cj.Status.Active[k].Name })
	return active
}

// cleanupHistory deletes the oldest finished Jobs beyond the history limits (3 successful,
// 1 failed by default).
func (c *Controller) cleanupHistory(ctx context.Context, cj *batchv1.CronJob, owned []*batchv1.Job) error {
	var succeeded, failed []*batchv1.Job
	for _, j := range owned {
		switch _, how := jobFinished(j); how {
		case batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	for _, h := range []struct {
		jobs  []*batchv1.Job
		limit int32
	}{{succeeded, ptr.Deref(cj.Spec.SuccessfulJobsHistoryLimit, 3)}, {failed, ptr.Deref(cj.Spec.FailedJobsHistoryLimit, 1)}} {
		if int32(len(h.jobs)) <= h.limit {
			continue
		}
		sort.Slice(h.jobs, func(i, k int) bool { return h.jobs[i].CreationTimestamp.Before(&h.jobs[k].CreationTimestamp) })
		for _, j := range h.jobs[:int32(len(h.jobs))-h.limit] {
			if err := c.deleteJob(ctx, cj, j); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Controller) deleteJob(ctx context.Context, cj *batchv1.CronJob, j *batchv1.Job) error {
	err := c.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil && !apierrors.IsNotFound(err) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		return err
	}
	c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", j.Name)
	return nil
}

// startDue creates the Job of the most recent schedule time not yet served, honouring
// suspend, startingDeadlineSeconds and the concurrency policy; it returns the time until
// the next schedule time.
func (c *Controller) startDue(ctx context.Context, cj *batchv1.CronJob, active, owned []*batchv1.Job) (time.Duration, error) {
	sched, err := schedule(cj)
	if err != nil {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return 0, nil
	}
	now := c.clock.Now()
	next := sched.Next(now).Sub(now) + 100*time.Millisecond
	if ptr.Deref(cj.Spec.Suspend, false) {
		return 0, nil
	}
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		if from := now.Add(-time.Duration(*d) * time.Second); from.After(earliest) {
			earliest = from
		}
	}
	var due time.Time
	missed := 0
	for t := sched.Next(earliest); !t.After(now); t = sched.Next(t) {
		due = t
		missed++
	}
	if missed > 100 {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes",
			"too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed)
	}
	if due.IsZero() {
		return next, nil
	}
	job := jobFor(cj, due)
	for _, j := range owned {
		if j.Name == job.Name { // this time was served (by a sync whose status write was lost)
			cj.Status.LastScheduleTime = &metav1.Time{Time: due}
			return next, nil
		}
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(active) > 0 {
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return next, nil
		}
	case batchv1.ReplaceConcurrent:
		for _, j := range active {
			if err := c.deleteJob(ctx, cj, j); err != nil {
				return 0, err
			}
		}
		cj.Status.Active = nil
	}
	created, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, job, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Made by an earlier sync whose status write did not land.
	case err != nil:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return 0, err
	default:
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
		cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{Kind: "Job", Namespace: created.Namespace, Name: created.Name,
			UID: created.UID, APIVersion: "batch/v1", ResourceVersion: created.ResourceVersion})
	}
	cj.Status.LastScheduleTime = &metav1.Time{Time: due}
	return next, nil
}

// jobFor is the Job of one schedule time: named after the CronJob and the time in minutes.
func jobFor(cj *batchv1.CronJob, at time.Time) *batchv1.Job {
	t := cj.Spec.JobTemplate.DeepCopy()
	annotations := t.Annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[scheduledTimestampAnnotation] = at.In(location(cj)).Format(time.RFC3339)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%d", cj.Name, at.Unix()/60), Namespace: cj.Namespace,
			Labels: t.Labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, kind)},
		},
		Spec: t.Spec,
	}
}

func location(cj *batchv1.CronJob) *time.Location {
	if tz := ptr.Deref(cj.Spec.TimeZone, ""); tz != "" {
		if loc, err := time.LoadLocation(tz); err == nil {
			return loc
		}
	}
	return time.Local
}
