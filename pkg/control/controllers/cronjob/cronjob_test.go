package cronjob_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controllers/cronjob"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// TestScheduleAgainstMiniapi drives the controller's sync with a fake clock against a real
// miniapi (whose own cronjob controller is off): one Job per schedule time, named by it;
// Forbid skips while one runs, Replace replaces it; history limits; suspend.
func TestScheduleAgainstMiniapi(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"*", "-cronjob"} })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactory(cl.Client, 0)
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cl.Client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	clk := clocktesting.NewFakePassiveClock(time.Now())
	c, err := cronjob.New(cl.Client, factory.Batch().V1().CronJobs(), factory.Batch().V1().Jobs(),
		broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "cronjob-controller"}), clk,
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go c.Run(ctx)

	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "default"},
		Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *", ConcurrencyPolicy: batchv1.ForbidConcurrent,
			SuccessfulJobsHistoryLimit: ptr.To[int32](1),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "localhost/minik8s/busybox:v1"}}}}}}},
	}
	created, err := cl.Client.BatchV1().CronJobs("default").Create(ctx, cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The fake clock starts where the CronJob was created.
	clk.SetTime(created.CreationTimestamp.Time)
	// settle wakes the controller after the fake clock moved (a touch of the CronJob is an
	// event) and waits for its writes to land.
	pokes := 0
	settle := func() {
		t.Helper()
		pokes++
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/poke":"%d"}}}`, pokes)
		if _, err := cl.Client.BatchV1().CronJobs("default").Patch(ctx, "tick", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
	}
	jobNames := func() []string {
		list, err := cl.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, j := range list.Items {
			if j.DeletionTimestamp == nil {
				names = append(names, j.Name)
			}
		}
		return names
	}
	// waitNames polls for the Jobs to be exactly want (writes and caches take a moment).
	waitNames := func(want, why string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := strings.Join(jobNames(), ",")
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: jobs %q, want %q", why, got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	settle()
	if n := jobNames(); len(n) != 0 {
		t.Fatalf("jobs before the first schedule time: %v", n)
	}
	first := created.CreationTimestamp.Time.Truncate(time.Minute).Add(time.Minute)
	clk.SetTime(first.Add(5 * time.Second))
	settle()
	waitNames(fmt.Sprintf("tick-%d", first.Unix()/60), "after the first schedule time")
	names := jobNames()
	// Forbid: the next minute starts nothing while the first job runs.
	clk.SetTime(first.Add(65 * time.Second))
	settle()
	if n := jobNames(); len(n) != 1 {
		t.Fatalf("Forbid started another job while one runs: %v", n)
	}
	// The job completes: the schedule time Forbid skipped is started now (it is still
	// within the schedule), as Kubernetes does.
	base := first.Unix() / 60
	completeJob(t, cl, names[0])
	settle()
	waitNames(fmt.Sprintf("tick-%d,tick-%d", base, base+1), "after the first job completed, the skipped time starts")
	names = jobNames()
	// The second completes too: the history keeps one successful job; the next minute starts.
	completeJob(t, cl, names[1])
	clk.SetTime(first.Add(125 * time.Second))
	settle()
	waitNames(fmt.Sprintf("tick-%d,tick-%d", base+1, base+2), "after two completions (history limit 1)")
	got, _ := cl.Client.BatchV1().CronJobs("default").Get(ctx, "tick", metav1.GetOptions{})
	if got.Status.LastScheduleTime == nil || !got.Status.LastScheduleTime.Time.Equal(first.Add(2*time.Minute)) || len(got.Status.Active) != 1 || got.Status.LastSuccessfulTime == nil {
		t.Errorf("status %+v (first %v)", got.Status, first)
	}
	// Replace: the running job is replaced by the next one.
	got.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
	if _, err := cl.Client.BatchV1().CronJobs("default").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(first.Add(185 * time.Second))
	settle()
	waitNames(fmt.Sprintf("tick-%d,tick-%d", base+1, base+3), "Replace replaces the running job")
	names = jobNames()
	// Suspended: nothing new.
	cl.MustKubectl(t, "", "patch", "cronjob", "tick", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	clk.SetTime(first.Add(245 * time.Second))
	settle()
	if n := jobNames(); strings.Join(n, ",") != strings.Join(names, ",") {
		t.Errorf("a suspended cronjob started a job: %v", n)
	}
	out := cl.MustKubectl(t, "", "get", "cronjob", "tick")
	if !strings.Contains(out, "*/1 * * * *") || !strings.Contains(out, "True") {
		t.Errorf("kubectl get cronjob:\n%s", out)
	}
	events := cl.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name=tick")
	for _, want := range []string{"SuccessfulCreate", "Created job tick-", "SawCompletedJob", "SuccessfulDelete"} {
		if !strings.Contains(events, want) {
			t.Errorf("events lack %q:\n%s", want, events)
		}
	}
}

func completeJob(t *testing.T, cl *controlplanetest.Cluster, name string) {
	t.Helper()
	ctx := context.Background()
	j, err := cl.Client.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	j.Status.StartTime, j.Status.CompletionTime, j.Status.Succeeded = &now, &now, 1
	j.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	if _, err := cl.Client.BatchV1().Jobs("default").UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
