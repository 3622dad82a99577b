package job_test

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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func newIndexedJob(name string, completions, parallelism int32) *batchv1.Job {
	j := newJob(name)
	j.Spec.Completions, j.Spec.Parallelism = ptr.To(completions), ptr.To(parallelism)
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	return j
}

// failIndex is an exit for runIndexes: the pod of index failing exits with code, the others with 0.
func failIndex(failing string, code int32) func(index string) int32 {
	return func(index string) int32 {
		if index == failing {
			return code
		}
		return 0
	}
}

// runIndexes plays the kubelet for an Indexed Job until done holds: each new running pod
// exits with the code exit gives its index. It returns the pods of each index, oldest first.
func runIndexes(t *testing.T, ctx context.Context, c *controlplanetest.Cluster, job string, within time.Duration, exit func(index string) int32, done func(*batchv1.Job) bool) map[string][]corev1.Pod {
	t.Helper()
	byIndex := map[string][]corev1.Pod{}
	seen := map[string]bool{}
	controllertest.Until(t, "job "+job+" to reach its end", within, func() bool {
		for _, p := range running(jobPods(t, ctx, c, job)) {
			if seen[p.Name] {
				continue
			}
			seen[p.Name] = true
			idx := p.Annotations[batchv1.JobCompletionIndexAnnotation]
			byIndex[idx] = append(byIndex[idx], p)
			if code := exit(idx); code >= 0 {
				finishPod(t, ctx, c, p, code)
			}
		}
		return done(getJob(t, ctx, c, job))
	})
	return byIndex
}

func isFailed(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobFailed) != nil }

// backoffLimitPerIndex 1: index 1 fails twice (the retry after the 10 s back-off of its
// index, annotated with its failure count), is not retried again, and once the other
// indexes succeeded the Job fails with FailedIndexes.
func TestBackoffLimitPerIndex(t *testing.T) {
	c, ctx := start(t)
	j := newIndexedJob("perindex", 3, 2)
	j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	createJob(t, ctx, c, j)
	exit := failIndex("1", 3)
	pods := runIndexes(t, ctx, c, "perindex", 40*time.Second, exit, isFailed)
	j = getJob(t, ctx, c, "perindex")
	if cond := jobCondition(j, batchv1.JobFailed); cond.Reason != "FailedIndexes" || cond.Message != "Job has failed indexes" {
		t.Errorf("Failed condition = %+v", cond)
	}
	if ft := jobCondition(j, batchv1.JobFailureTarget); ft == nil || ft.Reason != "FailedIndexes" {
		t.Errorf("FailureTarget = %+v", ft)
	}
	if ptr.Deref(j.Status.FailedIndexes, "<nil>") != "1" || j.Status.CompletedIndexes != "0,2" || j.Status.Failed != 2 || j.Status.Succeeded != 2 {
		t.Errorf("status: failedIndexes %v completedIndexes %q failed %d succeeded %d", ptr.Deref(j.Status.FailedIndexes, "<nil>"), j.Status.CompletedIndexes, j.Status.Failed, j.Status.Succeeded)
	}
	one := pods["1"]
	if len(one) != 2 {
		t.Fatalf("index 1 ran %d pods, want 2 (one retry)", len(one))
	}
	for n, p := range one {
		if got := p.Annotations[batchv1.JobIndexFailureCountAnnotation]; got != []string{"0", "1"}[n] {
			t.Errorf("pod %d of index 1 has failure count %q", n, got)
		}
	}
	if waited := one[1].CreationTimestamp.Sub(one[0].CreationTimestamp.Time); waited < 9*time.Second {
		t.Errorf("index 1 retried %v after its first pod, want the 10s back-off of the index", waited)
	}
}

// maxFailedIndexes 0: the first failed index fails the Job with MaxFailedIndexesExceeded
// and the pods of the other indexes are deleted.
func TestMaxFailedIndexes(t *testing.T) {
	c, ctx := start(t)
	j := newIndexedJob("maxfailed", 4, 3)
	j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = ptr.To[int32](0), ptr.To[int32](0)
	createJob(t, ctx, c, j)
	controllertest.Until(t, "three pods", 10*time.Second, func() bool { return len(running(jobPods(t, ctx, c, "maxfailed"))) == 3 })
	for _, p := range running(jobPods(t, ctx, c, "maxfailed")) {
		if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "0" {
			finishPod(t, ctx, c, p, 1)
		}
	}
	controllertest.Until(t, "the job to fail", 20*time.Second, func() bool { return isFailed(getJob(t, ctx, c, "maxfailed")) })
	j = getJob(t, ctx, c, "maxfailed")
	if cond := jobCondition(j, batchv1.JobFailed); cond.Reason != "MaxFailedIndexesExceeded" || cond.Message != "Job has exceeded the specified maximal number of failed indexes" {
		t.Errorf("Failed condition = %+v", cond)
	}
	if ptr.Deref(j.Status.FailedIndexes, "") != "0" || j.Status.Active != 0 {
		t.Errorf("failedIndexes %v, active %d", ptr.Deref(j.Status.FailedIndexes, "<nil>"), j.Status.Active)
	}
	if run := running(jobPods(t, ctx, c, "maxfailed")); len(run) != 0 {
		t.Errorf("%d pods still run", len(run))
	}
}

// The podFailurePolicy action FailIndex fails the index at once, retries left or not; the
// other index still runs.
func TestFailIndex(t *testing.T) {
	c, ctx := start(t)
	j := newIndexedJob("failindex", 2, 1)
	j.Spec.BackoffLimitPerIndex = ptr.To[int32](3)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{onExitCode(batchv1.PodFailurePolicyActionFailIndex, 42)}}
	createJob(t, ctx, c, j)
	exit := failIndex("0", 42)
	pods := runIndexes(t, ctx, c, "failindex", 20*time.Second, exit, isFailed)
	j = getJob(t, ctx, c, "failindex")
	if cond := jobCondition(j, batchv1.JobFailed); cond.Reason != "FailedIndexes" || ptr.Deref(j.Status.FailedIndexes, "") != "0" || j.Status.CompletedIndexes != "1" {
		t.Errorf("Failed condition %+v, failedIndexes %v, completedIndexes %q", cond, ptr.Deref(j.Status.FailedIndexes, "<nil>"), j.Status.CompletedIndexes)
	}
	if len(pods["0"]) != 1 {
		t.Errorf("index 0 ran %d pods, FailIndex allows no retry", len(pods["0"]))
	}
}

// successPolicy: once indexes 0 and 2 succeeded the Job meets its success criteria, the
// other pods are deleted and it completes with reason SuccessPolicy.
func TestSuccessPolicy(t *testing.T) {
	c, ctx := start(t)
	j := newIndexedJob("leader", 5, 5)
	j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
		{SucceededCount: ptr.To[int32](5)},
		{SucceededIndexes: ptr.To("0,2")},
	}}
	createJob(t, ctx, c, j)
	exit := func(idx string) int32 {
		if idx == "0" || idx == "2" {
			return 0
		}
		return -1 // keeps running
	}
	runIndexes(t, ctx, c, "leader", 20*time.Second, exit, func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobComplete) != nil })
	j = getJob(t, ctx, c, "leader")
	for _, ct := range []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete} {
		if cond := jobCondition(j, ct); cond.Reason != "SuccessPolicy" || cond.Message != "Matched rules at index 1" {
			t.Errorf("%s condition = %+v", ct, cond)
		}
	}
	if j.Status.CompletedIndexes != "0,2" || j.Status.Active != 0 || j.Status.CompletionTime == nil {
		t.Errorf("status = %+v", j.Status)
	}
	if run := running(jobPods(t, ctx, c, "leader")); len(run) != 0 {
		t.Errorf("%d pods still run", len(run))
	}
}

// A Job managed by another controller gets neither pods nor status from ours.
func TestManagedByAnotherController(t *testing.T) {
	c, ctx := start(t)
	j := newJob("external")
	j.Spec.ManagedBy = ptr.To("example.com/batch")
	createJob(t, ctx, c, j)
	// A Job of ours created after it is synced, so the controller has seen both.
	createJob(t, ctx, c, newJob("ours"))
	controllertest.Until(t, "a pod of our job", 10*time.Second, func() bool { return len(jobPods(t, ctx, c, "ours")) == 1 })
	time.Sleep(time.Second)
	if n := len(jobPods(t, ctx, c, "external")); n != 0 {
		t.Errorf("%d pods created for a Job managed elsewhere", n)
	}
	if st := getJob(t, ctx, c, "external").Status; st.StartTime != nil || st.UncountedTerminatedPods != nil {
		t.Errorf("status written: %+v", st)
	}
}

// A FailJob rule fails the Job at once even when the pod's index has retries left: the
// index's last failed pod is not held back for a replacement, so none is created (kube's
// syncJob matches the podFailurePolicy over all failed pods before anything else).
func TestFailJobBeforeIndexRetry(t *testing.T) {
	c, ctx := start(t)
	j := newIndexedJob("failjob", 2, 2)
	j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{onExitCode(batchv1.PodFailurePolicyActionFailJob, 42)}}
	createJob(t, ctx, c, j)
	exit := func(idx string) int32 {
		if idx == "0" {
			return 42
		}
		return -1 // keeps running
	}
	runIndexes(t, ctx, c, "failjob", 20*time.Second, exit, isFailed)
	j = getJob(t, ctx, c, "failjob")
	// Index 1's pod, deleted while it ran, counts as failed too, as in kube.
	if cond := jobCondition(j, batchv1.JobFailed); cond.Reason != "PodFailurePolicy" || j.Status.Failed != 2 {
		t.Errorf("Failed condition %+v, failed %d", cond, j.Status.Failed)
	}
	var created []string
	for _, e := range events(t, ctx, c, j) {
		if e.Reason == "SuccessfulCreate" {
			created = append(created, e.Message)
		}
	}
	if len(created) != 2 {
		t.Errorf("pods created: %q, want one for each index and no retry of index 0", created)
	}
}

// Once a Job has met its success criteria, a pod that ends as a FailJob rule says while
// the Job deletes it does not fail the Job: it completes, as kube's syncJob evaluates the
// podFailurePolicy only without SuccessCriteriaMet.
func TestFailJobAfterSuccessCriteriaMet(t *testing.T) {
	c, ctx := start(t)
	j := newIndexedJob("metfirst", 2, 2)
	j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{onExitCode(batchv1.PodFailurePolicyActionFailJob, 42)}}
	// A finalizer of the test's keeps index 1's pod after its deletion, until its status says
	// how it ended.
	const hold = "example.com/hold"
	j.Spec.Template.Finalizers = []string{hold}
	createJob(t, ctx, c, j)
	controllertest.Until(t, "two pods", 10*time.Second, func() bool { return len(running(jobPods(t, ctx, c, "metfirst"))) == 2 })
	var second corev1.Pod
	for _, p := range running(jobPods(t, ctx, c, "metfirst")) {
		if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "0" {
			finishPod(t, ctx, c, p, 0)
		} else {
			second = p
		}
	}
	controllertest.Until(t, "SuccessCriteriaMet and index 1's pod deleted", 10*time.Second, func() bool {
		p, err := c.Client.CoreV1().Pods(c.Namespace).Get(ctx, second.Name, metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp != nil && jobCondition(getJob(t, ctx, c, "metfirst"), batchv1.JobSuccessCriteriaMet) != nil
	})
	finishPod(t, ctx, c, second, 42)
	for _, p := range jobPods(t, ctx, c, "metfirst") {
		patch := fmt.Appendf(nil, `{"metadata":{"$deleteFromPrimitiveList/finalizers":[%q]}}`, hold)
		if _, err := c.Client.CoreV1().Pods(c.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	controllertest.Until(t, "the job to end", 20*time.Second, func() bool {
		j := getJob(t, ctx, c, "metfirst")
		return isFailed(j) || jobCondition(j, batchv1.JobComplete) != nil
	})
	j = getJob(t, ctx, c, "metfirst")
	if cond := jobCondition(j, batchv1.JobComplete); cond == nil || cond.Reason != "SuccessPolicy" || jobCondition(j, batchv1.JobFailureTarget) != nil {
		t.Errorf("conditions %+v, want Complete by SuccessPolicy and no FailureTarget", j.Status.Conditions)
	}
}
