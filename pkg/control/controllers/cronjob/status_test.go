package cronjob

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

// TestStatusConflictKeepsStartedJob: the CronJob changes (kubectl annotate) while a sync
// starts a Job, so its status update meets a Conflict. The Job must still reach
// status.active: a Replace CronJob whose next sync saw no active Job would start a
// second one beside it instead of replacing it (CI flake of TestCronJobReplace).
func TestStatusConflictKeepsStartedJob(t *testing.T) {
	created := time.Date(2026, 12, 7, 10, 0, 30, 0, time.UTC)
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "swap", Namespace: "default", UID: "cj-1", CreationTimestamp: metav1.NewTime(created)},
		Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *", ConcurrencyPolicy: batchv1.ReplaceConcurrent, JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "w", Image: "x"}}}},
		}}},
	}
	client := fake.NewClientset(cj)
	conflicts := 0
	client.PrependReactor("update", "cronjobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || conflicts > 0 {
			return false, nil, nil
		}
		conflicts++
		return true, nil, apierrors.NewConflict(batchv1.Resource("cronjobs"), "swap", nil)
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(created.Add(time.Minute))
	c, err := New(client, factory.Batch().V1().CronJobs(), factory.Batch().V1().Jobs(), record.NewFakeRecorder(10), clk, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), c.synced...)

	if _, err := c.sync(ctx, "default/swap"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if conflicts != 1 {
		t.Fatalf("%d conflicts injected, want 1", conflicts)
	}
	got, err := client.BatchV1().CronJobs("default").Get(ctx, "swap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Active) != 1 || got.Status.Active[0].Name != jobName(cj, created.Truncate(time.Minute).Add(time.Minute)) {
		t.Errorf("status.active %v after a conflict, want the Job the sync started", got.Status.Active)
	}
	if got.Status.LastScheduleTime == nil {
		t.Error("lastScheduleTime not written after a conflict")
	}
}
