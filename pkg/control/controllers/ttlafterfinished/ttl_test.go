package ttlafterfinished_test

import (
	"context"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestFinishedJobDeletedAfterTTL(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	ctx := context.Background()
	mk := func(name string, ttl *int32) {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ttl, Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "img"}}}}}}
		created, err := cl.Client.BatchV1().Jobs("default").Create(ctx, j, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := metav1.Now()
		created.Status.Conditions = append(created.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now},
			batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now})
		created.Status.StartTime = &now
		if _, err := cl.Client.BatchV1().Jobs("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("short", ptr.To[int32](1))
	mk("kept", nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := cl.Client.BatchV1().Jobs("default").Get(ctx, "short", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a finished job with ttlSecondsAfterFinished=1 is still there: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := cl.Client.BatchV1().Jobs("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("a finished job without TTL was deleted: %v", err)
	}
}
