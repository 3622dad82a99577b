package ttlafterfinished_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A Job finishes (its pod succeeds, played by the test); the one with a 2 s TTL is deleted
// with its pods after it, the one without a TTL stays.
func TestFinishedJobDeletedAfterTTL(t *testing.T) {
	c := controlplanetest.Start(t, nil)
	ctx := context.Background()
	jobs := c.Client.BatchV1().Jobs("default")
	for name, ttl := range map[string]*int32{"short": ptr.To[int32](2), "keep": nil} {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ttl,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "work", Image: "localhost/minik8s/busybox:v1"}}}}}}
		if _, err := jobs.Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var finishedAt time.Time
	deadline := time.Now().Add(20 * time.Second)
	for done := map[string]bool{}; len(done) < 2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("jobs did not complete: %v", done)
		}
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded {
				p.Status.Phase = corev1.PodSucceeded
				_, _ = c.Client.CoreV1().Pods("default").UpdateStatus(ctx, &p, metav1.UpdateOptions{})
			}
		}
		for _, name := range []string{"short", "keep"} {
			if j, err := jobs.Get(ctx, name, metav1.GetOptions{}); err == nil && j.Status.CompletionTime != nil && !done[name] {
				done[name] = true
				if name == "short" {
					// The controller counts the TTL from the recorded completion (whole
					// seconds), not from when this loop, busy with the pods, noticed it.
					finishedAt = j.Status.CompletionTime.Time
				}
			}
		}
	}
	controllertest.WaitFor(t, "the job with a 2s TTL to be deleted", 20*time.Second, func() (bool, string) {
		_, err := jobs.Get(ctx, "short", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if after := time.Since(finishedAt); after < 2*time.Second {
		t.Errorf("deleted %v after its completion time, before its 2s TTL", after)
	}
	pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=short"})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods of the deleted job: %v %v", len(pods.Items), err)
	}
	if _, err := jobs.Get(ctx, "keep", metav1.GetOptions{}); err != nil {
		t.Errorf("the job without a TTL: %v", err)
	}
}
