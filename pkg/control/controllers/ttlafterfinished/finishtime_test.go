package ttlafterfinished

import (
	"log/slog"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// TestFinishWithoutTimeIsNotExpired: as kube's jobFinishTime, a finished condition without
// a lastTransitionTime gives no finish time, so the sync fails (and is retried) instead of
// counting the TTL from the zero time and deleting the Job at once.
func TestFinishWithoutTimeIsNotExpired(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j"},
		Spec:   batchv1.JobSpec{TTLSecondsAfterFinished: ptr.To[int32](0)},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}
	client := fake.NewClientset(job)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Batch().V1().Jobs(), clocktesting.NewFakeClock(time.Now()), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := controllertest.StartInformers(t, factory)
	_, err = c.sync(ctx, "ns/j")
	if want := "unable to find the time when the Job ns/j finished"; err == nil || err.Error() != want {
		t.Errorf("sync: %v, want %q", err, want)
	}
	if _, err := client.BatchV1().Jobs("ns").Get(ctx, "j", metav1.GetOptions{}); err != nil {
		t.Errorf("the job: %v, want it kept", err)
	}
}
