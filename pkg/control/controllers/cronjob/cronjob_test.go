package cronjob_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controllers/cronjob"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// startWithFakeClock runs miniapi (with its job controller) and, in the test, a cronjob
// controller on a fake clock against it, so minutes pass in a Step.
func startWithFakeClock(t *testing.T) (*controlplanetest.Cluster, *testingclock.FakeClock, context.Context) {
	c := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"*", "-cronjob"} })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clk := testingclock.NewFakeClock(time.Now())
	factory := informers.NewSharedInformerFactory(c.Client, 0)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.Client.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	ctrl, err := cronjob.New(c.Client, factory.Batch().V1().CronJobs(), factory.Batch().V1().Jobs(),
		broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: cronjob.Name}), clk,
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	go ctrl.Run(ctx)
	return c, clk, ctx
}

func newCronJob(name string, policy batchv1.ConcurrencyPolicy) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *", ConcurrencyPolicy: policy, JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "work", Image: "localhost/minik8s/busybox:v1"}}}},
		}}},
	}
}

// jobs are the CronJob's Jobs not being deleted, oldest first.
func jobs(t *testing.T, ctx context.Context, c *controlplanetest.Cluster, cj string) []batchv1.Job {
	t.Helper()
	list, err := c.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if ref := metav1.GetControllerOf(&j); ref != nil && ref.Name == cj && j.DeletionTimestamp == nil {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b batchv1.Job) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// completeJob plays the kubelet for the Job's pod: it succeeds, and the job controller
// completes the Job.
func completeJob(t *testing.T, ctx context.Context, c *controlplanetest.Cluster, job string) {
	t.Helper()
	controllertest.Until(t, "a pod of "+job, 30*time.Second, func() bool {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
		if err != nil || len(pods.Items) == 0 {
			return false
		}
		p := pods.Items[0]
		p.Status.Phase = corev1.PodSucceeded
		_, err = c.Client.CoreV1().Pods("default").UpdateStatus(ctx, &p, metav1.UpdateOptions{})
		return err == nil
	})
	controllertest.Until(t, job+" to complete", 30*time.Second, func() bool {
		j, err := c.Client.BatchV1().Jobs("default").Get(ctx, job, metav1.GetOptions{})
		return err == nil && j.Status.CompletionTime != nil
	})
}

func getCronJob(t *testing.T, ctx context.Context, c *controlplanetest.Cluster, name string) *batchv1.CronJob {
	t.Helper()
	cj, err := c.Client.BatchV1().CronJobs("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cj
}

func hasEvent(t *testing.T, ctx context.Context, c *controlplanetest.Cluster, cj *batchv1.CronJob, reason, message string) bool {
	evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(cj.UID)})
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
		return e.Reason == reason && strings.HasPrefix(e.Message, message) && e.Source.Component == cronjob.Name
	})
}

// Forbid: one Job per minute, named by its minute, none while the previous runs; history
// limits keep the newest finished Jobs; status follows.
func TestCronJobForbidAndHistory(t *testing.T) {
	c, clk, ctx := startWithFakeClock(t)
	cj := newCronJob("tick", batchv1.ForbidConcurrent)
	cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](1)
	cj, err := c.Client.BatchV1().CronJobs("default").Create(ctx, cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // nothing is due before the first minute
	if n := len(jobs(t, ctx, c, "tick")); n != 0 {
		t.Fatalf("%d jobs before any start time", n)
	}
	setTime(t, c, clk, "tick", clk.Now().Add(time.Minute))
	controllertest.Until(t, "the first job", 10*time.Second, func() bool { return len(jobs(t, ctx, c, "tick")) == 1 })
	first := jobs(t, ctx, c, "tick")[0]
	scheduled := cronStart(clk.Now())
	if want := fmt.Sprintf("tick-%d", scheduled.Unix()/60); first.Name != want {
		t.Errorf("job name %s, want %s", first.Name, want)
	}
	if got := first.Annotations[cronjob.ScheduledTimestampAnnotation]; got != scheduled.UTC().Format(time.RFC3339) {
		t.Errorf("scheduled-timestamp annotation %q, want %q", got, scheduled.UTC().Format(time.RFC3339))
	}
	controllertest.Until(t, "status", 10*time.Second, func() bool {
		st := getCronJob(t, ctx, c, "tick").Status
		return len(st.Active) == 1 && st.Active[0].Name == first.Name && st.LastScheduleTime != nil && st.LastScheduleTime.Equal(&metav1.Time{Time: scheduled})
	})
	controllertest.Until(t, "SuccessfulCreate", 10*time.Second, func() bool { return hasEvent(t, ctx, c, cj, "SuccessfulCreate", "Created job "+first.Name) })

	setTime(t, c, clk, "tick", clk.Now().Add(time.Minute)) // the first still runs: Forbid skips this minute
	controllertest.Until(t, "JobAlreadyActive", 10*time.Second, func() bool {
		return hasEvent(t, ctx, c, cj, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
	})
	if n := len(jobs(t, ctx, c, "tick")); n != 1 {
		t.Fatalf("%d jobs under Forbid while one runs", n)
	}
	completeJob(t, ctx, c, first.Name)
	controllertest.Until(t, "SawCompletedJob and lastSuccessfulTime", 10*time.Second, func() bool {
		return getCronJob(t, ctx, c, "tick").Status.LastSuccessfulTime != nil && hasEvent(t, ctx, c, cj, "SawCompletedJob", "Saw completed job: "+first.Name+", condition: Complete")
	})
	// The minute Forbid skipped is still due (lastScheduleTime did not move): it starts now.
	skipped := fmt.Sprintf("tick-%d", scheduled.Unix()/60+1)
	controllertest.Until(t, "the job of the skipped minute", 10*time.Second, func() bool {
		return slices.ContainsFunc(jobs(t, ctx, c, "tick"), func(j batchv1.Job) bool { return j.Name == skipped })
	})
	second := jobs(t, ctx, c, "tick")
	completeJob(t, ctx, c, second[len(second)-1].Name)
	// successfulJobsHistoryLimit 1: the first Job goes.
	controllertest.Until(t, "history cleanup", 20*time.Second, func() bool {
		js := jobs(t, ctx, c, "tick")
		return len(js) == 1 && js[0].Name != first.Name
	})
	controllertest.Until(t, "SuccessfulDelete", 10*time.Second, func() bool { return hasEvent(t, ctx, c, cj, "SuccessfulDelete", "Deleted job "+first.Name) })
}

// cronStart is the start of the minute t is in: "*/1 * * * *" fires then.
func cronStart(t time.Time) time.Time { return t.Truncate(time.Minute) }

// setTime moves the fake clock and then touches the CronJob, so it is synced at the new
// time: a sync that read the clock before the move requeues itself for a minute after it,
// which the fake clock would never reach.
func setTime(t *testing.T, c *controlplanetest.Cluster, clk *testingclock.FakeClock, cj string, to time.Time) {
	t.Helper()
	clk.SetTime(to)
	c.MustKubectl(t, "", "annotate", "--overwrite", "cronjob", cj, fmt.Sprintf("wake=%d", to.Unix()))
}

// Replace: a new start time deletes the running Job and starts another.
func TestCronJobReplace(t *testing.T) {
	c, clk, ctx := startWithFakeClock(t)
	if _, err := c.Client.BatchV1().CronJobs("default").Create(ctx, newCronJob("swap", batchv1.ReplaceConcurrent), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setTime(t, c, clk, "swap", clk.Now().Add(time.Minute))
	controllertest.Until(t, "the first job", 10*time.Second, func() bool { return len(jobs(t, ctx, c, "swap")) == 1 })
	first := jobs(t, ctx, c, "swap")[0].Name
	setTime(t, c, clk, "swap", clk.Now().Add(time.Minute))
	controllertest.Until(t, "the replacement", 10*time.Second, func() bool {
		js := jobs(t, ctx, c, "swap")
		return len(js) == 1 && js[0].Name != first
	})
	controllertest.Until(t, "status names only the new job", 10*time.Second, func() bool {
		st := getCronJob(t, ctx, c, "swap").Status
		return len(st.Active) == 1 && st.Active[0].Name != first
	})
}

// suspend and startingDeadlineSeconds: nothing starts while suspended, and a start time
// missed by more than the deadline is skipped.
func TestCronJobSuspendAndDeadline(t *testing.T) {
	c, clk, ctx := startWithFakeClock(t)
	cj := newCronJob("late", batchv1.AllowConcurrent)
	cj.Spec.Suspend = ptr.To(true)
	cj.Spec.StartingDeadlineSeconds = ptr.To[int64](10)
	if _, err := c.Client.BatchV1().CronJobs("default").Create(ctx, cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	none := func(why string) {
		t.Helper()
		time.Sleep(2 * time.Second)
		if n := len(jobs(t, ctx, c, "late")); n != 0 {
			t.Fatalf("%d jobs started %s", n, why)
		}
	}
	// 2 s past a start time: due, but suspended.
	boundary := cronStart(clk.Now()).Add(2 * time.Minute)
	setTime(t, c, clk, "late", boundary.Add(2*time.Second))
	none("while suspended")
	// Resumed 30 s past it: the start time is older than the 10 s deadline, and skipped.
	clk.SetTime(boundary.Add(30 * time.Second))
	c.MustKubectl(t, "", "patch", "cronjob", "late", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
	none("past their deadline")
	setTime(t, c, clk, "late", cronStart(clk.Now()).Add(time.Minute+2*time.Second))
	controllertest.Until(t, "a job within the deadline", 10*time.Second, func() bool { return len(jobs(t, ctx, c, "late")) == 1 })
	if got, want := jobs(t, ctx, c, "late")[0].Name, fmt.Sprintf("late-%d", cronStart(clk.Now()).Unix()/60); got != want {
		t.Errorf("job %s, want %s (the minute within the deadline)", got, want)
	}
}

// kubectl create cronjob, and kubectl get cronjob reads it; the in-process controller
// (real clock) runs it.
func TestKubectlCronJob(t *testing.T) {
	c := controlplanetest.Start(t, nil)
	c.MustKubectl(t, "", "create", "cronjob", "hello", "--image=localhost/minik8s/busybox:v1", "--schedule=@hourly", "--", "date")
	out := c.MustKubectl(t, "", "get", "cronjob", "hello")
	for _, want := range []string{"SCHEDULE", "@hourly", "False", "<none>"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get cronjob lacks %q:\n%s", want, out)
		}
	}
	out = c.MustKubectl(t, "", "create", "job", "now", "--from=cronjob/hello")
	if !strings.Contains(out, "job.batch/now created") {
		t.Errorf("kubectl create job --from: %s", out)
	}
}

// A Job someone made from the CronJob (kubectl create job --from=cronjob/x) is the
// CronJob's, but not one it started: as in Kubernetes it is reported (UnexpectedJob) and
// left out of status.active, so a Forbid CronJob still starts its own Job on schedule and
// no SawCompletedJob follows the manual Job's end.
func TestCronJobManualJobNotActive(t *testing.T) {
	c, clk, ctx := startWithFakeClock(t)
	if _, err := c.Client.BatchV1().CronJobs("default").Create(ctx, newCronJob("hand", batchv1.ForbidConcurrent), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.MustKubectl(t, "", "create", "job", "manual", "--from=cronjob/hand")
	cj := getCronJob(t, ctx, c, "hand")
	controllertest.Until(t, "UnexpectedJob", 10*time.Second, func() bool {
		return hasEvent(t, ctx, c, cj, "UnexpectedJob", "Saw a job that the controller did not create or forgot: manual")
	})
	if st := getCronJob(t, ctx, c, "hand").Status; len(st.Active) != 0 {
		t.Errorf("status.active %v, want the manual job left out", st.Active)
	}
	setTime(t, c, clk, "hand", clk.Now().Add(time.Minute))
	scheduled := fmt.Sprintf("hand-%d", cronStart(clk.Now()).Unix()/60)
	controllertest.Until(t, "the scheduled job beside the running manual one", 10*time.Second, func() bool {
		return slices.ContainsFunc(jobs(t, ctx, c, "hand"), func(j batchv1.Job) bool { return j.Name == scheduled })
	})
	controllertest.Until(t, "status.active names the scheduled job only", 10*time.Second, func() bool {
		st := getCronJob(t, ctx, c, "hand").Status
		return len(st.Active) == 1 && st.Active[0].Name == scheduled
	})
	completeJob(t, ctx, c, "manual")
	controllertest.Until(t, "lastSuccessfulTime from the manual job", 10*time.Second, func() bool {
		return getCronJob(t, ctx, c, "hand").Status.LastSuccessfulTime != nil
	})
	time.Sleep(time.Second)
	if hasEvent(t, ctx, c, cj, "SawCompletedJob", "Saw completed job: manual") {
		t.Error("SawCompletedJob for a job that was never active")
	}
}

// A running Job deleted behind the CronJob's back leaves status.active with a MissingJob
// Event; a schedule that never fires (February 31st) gets InvalidSchedule; 150 missed start
// times TooManyMissedTimes, worded as in Kubernetes.
func TestCronJobMissingJobAndInvalidSchedule(t *testing.T) {
	c, clk, ctx := startWithFakeClock(t)
	if _, err := c.Client.BatchV1().CronJobs("default").Create(ctx, newCronJob("lost", batchv1.ForbidConcurrent), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setTime(t, c, clk, "lost", clk.Now().Add(time.Minute))
	controllertest.Until(t, "the job", 10*time.Second, func() bool { return len(jobs(t, ctx, c, "lost")) == 1 })
	job := jobs(t, ctx, c, "lost")[0].Name
	controllertest.Until(t, "status.active names the job", 10*time.Second, func() bool { return len(getCronJob(t, ctx, c, "lost").Status.Active) == 1 })
	c.MustKubectl(t, "", "delete", "job", job)
	cj := getCronJob(t, ctx, c, "lost")
	controllertest.Until(t, "MissingJob", 10*time.Second, func() bool {
		return hasEvent(t, ctx, c, cj, "MissingJob", "Active job went missing: "+job)
	})
	controllertest.Until(t, "status.active empty", 10*time.Second, func() bool { return len(getCronJob(t, ctx, c, "lost").Status.Active) == 0 })

	never := newCronJob("never", batchv1.AllowConcurrent)
	never.Spec.Schedule = "59 23 31 2 *"
	never, err := c.Client.BatchV1().CronJobs("default").Create(ctx, never, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Until(t, "InvalidSchedule", 10*time.Second, func() bool {
		return hasEvent(t, ctx, c, never, "InvalidSchedule", "invalid schedule: 59 23 31 2 * : time difference between two schedules is less than 1 second")
	})

	many, err := c.Client.BatchV1().CronJobs("default").Create(ctx, newCronJob("many", batchv1.AllowConcurrent), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setTime(t, c, clk, "many", clk.Now().Add(150*time.Minute)) // 150 start times missed, no startingDeadlineSeconds
	controllertest.Until(t, "TooManyMissedTimes", 10*time.Second, func() bool {
		return hasEvent(t, ctx, c, many, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	})
}

// A Job the controller started whose status update was lost (a conflict, a restart) is
// taken back into status.active at its start time, as Kubernetes' syncCronJob does on
// AlreadyExists: the CronJob must not forget a Job of its own that runs.
func TestCronJobLostStatusUpdateRecovered(t *testing.T) {
	c, clk, ctx := startWithFakeClock(t)
	cj, err := c.Client.BatchV1().CronJobs("default").Create(ctx, newCronJob("forgot", batchv1.ForbidConcurrent), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	due := cronStart(clk.Now()).Add(time.Minute)
	started := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("forgot-%d", due.Unix()/60), Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}},
		Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
	if _, err := c.Client.BatchV1().Jobs("default").Create(ctx, started, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setTime(t, c, clk, "forgot", due.Add(2*time.Second))
	controllertest.Until(t, "status.active names the job started before the lost update", 10*time.Second, func() bool {
		st := getCronJob(t, ctx, c, "forgot").Status
		return len(st.Active) == 1 && st.Active[0].Name == started.Name && st.LastScheduleTime != nil && st.LastScheduleTime.Time.Equal(due)
	})
	if n := len(jobs(t, ctx, c, "forgot")); n != 1 {
		t.Errorf("%d jobs, want the one already started", n)
	}
}
