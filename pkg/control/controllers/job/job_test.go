package job_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// The tests play the kubelet: pods do not run, the test writes their status, and finishes
// the deletion of pods being deleted as a kubelet does once their containers stopped.

func TestMain(m *testing.M) { controlplanetest.Main(m) }

// start gives t a namespace of its own on the package's miniapi and a node of its own to
// run pods on (a node stops heartbeating when its test ends). The tests share nothing else,
// so they run in parallel: most of their time is waiting for the controller.
func start(t *testing.T) (*controlplanetest.Cluster, context.Context) {
	t.Parallel()
	c := controlplanetest.Shared(t)
	c.CreateReadyNode(t, c.Namespace, 110, nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go kubeletDeletes(ctx, c.Client, c.Namespace)
	return c, ctx
}

// kubeletDeletes removes pods of namespace being deleted gracefully, as their kubelet would.
func kubeletDeletes(ctx context.Context, client kubernetes.Interface, namespace string) {
	for ctx.Err() == nil {
		pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil && (p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds > 0) {
					_ = client.CoreV1().Pods(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func newJob(name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "work", Image: "localhost/minik8s/busybox:v1"}},
		}}},
	}
}

func jobPods(t *testing.T, ctx context.Context, c *controlplanetest.Cluster, job string) []corev1.Pod {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// running are the pods neither finished nor being deleted.
func running(pods []corev1.Pod) []corev1.Pod {
	return slices.DeleteFunc(pods, func(p corev1.Pod) bool {
		return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
}

// onlyPod waits within for job to have a single running pod, not the one named exclude
// (a replacement), and returns it.
func onlyPod(t *testing.T, ctx context.Context, c *controlplanetest.Cluster, job, exclude, what string, within time.Duration) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	controllertest.Until(t, what, within, func() bool {
		run := running(jobPods(t, ctx, c, job))
		if len(run) == 1 && run[0].Name != exclude {
			pod = run[0]
			return true
		}
		return false
	})
	return pod
}

// finishPod writes the status a kubelet writes when the pod's only container exited.
func finishPod(t *testing.T, ctx context.Context, c *controlplanetest.Cluster, pod corev1.Pod, exitCode int32, conditions ...corev1.PodCondition) {
	t.Helper()
	phase := corev1.PodSucceeded
	if exitCode != 0 {
		phase = corev1.PodFailed
	}
	// The scheduler writes the status of unbound pods too: retry on conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.Client.CoreV1().Pods(c.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Phase = phase
		cur.Status.Conditions = append(cur.Status.Conditions, conditions...)
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "work", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, FinishedAt: metav1.Now()}}}}
		_, err = c.Client.CoreV1().Pods(c.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("finish pod %s: %v", pod.Name, err)
	}
}

// onExitCode is a podFailurePolicy rule taking action when a container exits with code.
func onExitCode(action batchv1.PodFailurePolicyAction, code int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
		Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{code}}}
}

func createJob(t *testing.T, ctx context.Context, c *controlplanetest.Cluster, j *batchv1.Job) {
	t.Helper()
	if _, err := c.Client.BatchV1().Jobs(c.Namespace).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func getJob(t *testing.T, ctx context.Context, c *controlplanetest.Cluster, name string) *batchv1.Job {
	t.Helper()
	j, err := c.Client.BatchV1().Jobs(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func jobCondition(j *batchv1.Job, ct batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == ct && j.Status.Conditions[i].Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func events(t *testing.T, ctx context.Context, c *controlplanetest.Cluster, job *batchv1.Job) []corev1.Event {
	t.Helper()
	evs, err := c.Client.CoreV1().Events(c.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(job.UID)})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Items
}

func hasEvent(evs []corev1.Event, reason, messagePrefix string) bool {
	return slices.ContainsFunc(evs, func(e corev1.Event) bool {
		return e.Reason == reason && strings.HasPrefix(e.Message, messagePrefix) && e.Source.Component == "job-controller"
	})
}

// An Indexed Job of 5 completions with parallelism 2: never more than 2 pods run, each
// carries its index (annotation, label, JOB_COMPLETION_INDEX, hostname), and the Job
// completes with completedIndexes 0-4 as kubectl reads it.
func TestIndexedJob(t *testing.T) {
	c, ctx := start(t)
	j := newJob("idx")
	j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](5), ptr.To[int32](2)
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	j, err := c.Client.BatchV1().Jobs(c.Namespace).Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	finished := map[string]bool{}
	maxRunning := 0
	controllertest.Until(t, "5 indexes to succeed", 60*time.Second, func() bool {
		run := running(jobPods(t, ctx, c, "idx"))
		maxRunning = max(maxRunning, len(run))
		for _, p := range run {
			idx := p.Annotations[batchv1.JobCompletionIndexAnnotation]
			if seen[p.Name] {
				continue
			}
			seen[p.Name] = true
			if p.Labels[batchv1.JobCompletionIndexAnnotation] != idx || p.Spec.Hostname != "idx-"+idx || !strings.HasPrefix(p.Name, "idx-"+idx+"-") {
				t.Errorf("pod %s: index label %q, hostname %q, want index %s", p.Name, p.Labels[batchv1.JobCompletionIndexAnnotation], p.Spec.Hostname, idx)
			}
			env := p.Spec.Containers[0].Env
			if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-completion-index']" {
				t.Errorf("pod %s env = %+v", p.Name, env)
			}
			if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) || p.Labels[batchv1.ControllerUidLabel] != string(j.UID) || p.Labels["job-name"] != "idx" {
				t.Errorf("pod %s: finalizers %v labels %v", p.Name, p.Finalizers, p.Labels)
			}
			if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != j.UID {
				t.Errorf("pod %s is not controlled by the job: %v", p.Name, p.OwnerReferences)
			}
		}
		// Finish one pod at a time, so the controller has to start the next index.
		if len(run) > 0 && !finished[run[0].Name] {
			finished[run[0].Name] = true
			finishPod(t, ctx, c, run[0], 0)
		}
		return getJob(t, ctx, c, "idx").Status.Succeeded == 5
	})
	if maxRunning > 2 {
		t.Errorf("%d pods ran at once, parallelism is 2", maxRunning)
	}
	c.MustKubectl(t, "", "wait", "--for=condition=complete", "job/idx", "--timeout=30s")
	j = getJob(t, ctx, c, "idx")
	if j.Status.CompletedIndexes != "0-4" || j.Status.Active != 0 || j.Status.CompletionTime == nil || jobCondition(j, batchv1.JobSuccessCriteriaMet) == nil {
		t.Errorf("status = %+v", j.Status)
	}
	if cond := jobCondition(j, batchv1.JobComplete); cond == nil || cond.Reason != "CompletionsReached" {
		t.Errorf("Complete condition = %+v", cond)
	}
	if u := j.Status.UncountedTerminatedPods; u == nil || len(u.Succeeded)+len(u.Failed) != 0 {
		t.Errorf("uncountedTerminatedPods = %+v", u)
	}
	out := c.MustKubectl(t, "", "get", "jobs", "idx")
	if !strings.Contains(out, "Complete") || !strings.Contains(out, "5/5") {
		t.Errorf("kubectl get jobs:\n%s", out)
	}
	controllertest.Until(t, "finalizers released", 10*time.Second, func() bool {
		for _, p := range jobPods(t, ctx, c, "idx") {
			if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
				return false
			}
		}
		return true
	})
	evs := events(t, ctx, c, j)
	if !hasEvent(evs, "SuccessfulCreate", "Created pod: idx-") || !hasEvent(evs, "Completed", "Job completed") {
		t.Errorf("events: %+v", evs)
	}
	if len(seen) != 5 {
		t.Errorf("%d pods were created, want 5", len(seen))
	}
}

// backoffLimit 1: the first failure is replaced after the 10 s back-off, the second fails
// the Job with BackoffLimitExceeded.
func TestBackoffLimit(t *testing.T) {
	c, ctx := start(t)
	j := newJob("fails")
	j.Spec.BackoffLimit = ptr.To[int32](1)
	createJob(t, ctx, c, j)
	first := onlyPod(t, ctx, c, "fails", "", "the first pod", 20*time.Second)
	failedAt := time.Now()
	finishPod(t, ctx, c, first, 1)
	second := onlyPod(t, ctx, c, "fails", first.Name, "a replacement pod", 30*time.Second)
	if waited := second.CreationTimestamp.Sub(failedAt); waited < 9*time.Second {
		t.Errorf("replacement created %v after the failure, want the 10s back-off", waited)
	}
	if got := getJob(t, ctx, c, "fails").Status.Failed; got != 1 {
		t.Errorf("failed = %d after one failure", got)
	}
	finishPod(t, ctx, c, second, 1)
	controllertest.Until(t, "the job to fail", 20*time.Second, func() bool { return jobCondition(getJob(t, ctx, c, "fails"), batchv1.JobFailed) != nil })
	j = getJob(t, ctx, c, "fails")
	cond := jobCondition(j, batchv1.JobFailed)
	if cond.Reason != "BackoffLimitExceeded" || cond.Message != "Job has reached the specified backoff limit" || j.Status.Failed != 2 {
		t.Errorf("failed job: condition %+v, failed %d", cond, j.Status.Failed)
	}
	if ft := jobCondition(j, batchv1.JobFailureTarget); ft == nil || ft.Reason != "BackoffLimitExceeded" {
		t.Errorf("FailureTarget = %+v", ft)
	}
	controllertest.Until(t, "the BackoffLimitExceeded event", 10*time.Second, func() bool {
		return hasEvent(events(t, ctx, c, j), "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	})
	if out := c.MustKubectl(t, "", "get", "job", "fails"); !strings.Contains(out, "Failed") || !strings.Contains(out, "0/1") {
		t.Errorf("kubectl get job:\n%s", out)
	}
}

// activeDeadlineSeconds: running pods are deleted and the Job fails with DeadlineExceeded.
func TestActiveDeadline(t *testing.T) {
	c, ctx := start(t)
	j := newJob("slow")
	j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](4)
	j.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
	createJob(t, ctx, c, j)
	controllertest.Until(t, "two pods", 10*time.Second, func() bool { return len(running(jobPods(t, ctx, c, "slow"))) == 2 })
	controllertest.Until(t, "the deadline", 20*time.Second, func() bool { return jobCondition(getJob(t, ctx, c, "slow"), batchv1.JobFailed) != nil })
	j = getJob(t, ctx, c, "slow")
	if cond := jobCondition(j, batchv1.JobFailed); cond.Reason != "DeadlineExceeded" || cond.Message != "Job was active longer than specified deadline" {
		t.Errorf("Failed condition = %+v", cond)
	}
	if n := len(jobPods(t, ctx, c, "slow")); n != 0 || j.Status.Active != 0 {
		t.Errorf("%d pods left, active %d", n, j.Status.Active)
	}
	if took := j.Status.Conditions[len(j.Status.Conditions)-1].LastTransitionTime.Sub(j.Status.StartTime.Time); took < 3*time.Second {
		t.Errorf("failed %v after start, before the 3s deadline", took)
	}
}

// suspend deletes the running pods without counting them as failures; resume starts again.
func TestSuspend(t *testing.T) {
	c, ctx := start(t)
	j := newJob("pause")
	j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
	createJob(t, ctx, c, j)
	controllertest.Until(t, "two pods", 10*time.Second, func() bool { return len(running(jobPods(t, ctx, c, "pause"))) == 2 })
	c.MustKubectl(t, "", "patch", "job", "pause", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	controllertest.Until(t, "suspension", 20*time.Second, func() bool {
		j := getJob(t, ctx, c, "pause")
		return jobCondition(j, batchv1.JobSuspended) != nil && len(jobPods(t, ctx, c, "pause")) == 0 && j.Status.Active == 0
	})
	j = getJob(t, ctx, c, "pause")
	if j.Status.Failed != 0 || jobCondition(j, batchv1.JobSuspended).Reason != "JobSuspended" || j.Status.StartTime != nil {
		t.Errorf("suspended status = %+v, want no failures and no startTime (Kubernetes 1.36 clears it)", j.Status)
	}
	if out := c.MustKubectl(t, "", "get", "job", "pause"); !strings.Contains(out, "Suspended") {
		t.Errorf("kubectl get job:\n%s", out)
	}
	c.MustKubectl(t, "", "patch", "job", "pause", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
	controllertest.Until(t, "resumption", 20*time.Second, func() bool { return len(running(jobPods(t, ctx, c, "pause"))) == 2 })
	for _, p := range running(jobPods(t, ctx, c, "pause")) {
		finishPod(t, ctx, c, p, 0)
	}
	controllertest.Until(t, "completion", 20*time.Second, func() bool { return jobCondition(getJob(t, ctx, c, "pause"), batchv1.JobComplete) != nil })
	j = getJob(t, ctx, c, "pause")
	if !hasEvent(events(t, ctx, c, j), "Suspended", "Job suspended") || !hasEvent(events(t, ctx, c, j), "Resumed", "Job resumed") {
		t.Errorf("events: %+v", events(t, ctx, c, j))
	}
	for _, e := range events(t, ctx, c, j) {
		if (e.Reason == "Suspended" || e.Reason == "Resumed") && e.Count > 1 {
			t.Errorf("event %s sent %d times, want once", e.Reason, e.Count)
		}
	}
	for _, cond := range j.Status.Conditions {
		if cond.Type == batchv1.JobSuspended && (cond.Status != corev1.ConditionFalse || cond.Reason != "JobResumed") {
			t.Errorf("Suspended condition after resume = %+v", cond)
		}
	}
}

// podFailurePolicy: a disruption is ignored (not counted, replaced at once), exit code 42
// fails the Job with reason PodFailurePolicy.
func TestPodFailurePolicy(t *testing.T) {
	c, ctx := start(t)
	j := newJob("policy")
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		onExitCode(batchv1.PodFailurePolicyActionFailJob, 42),
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
	}}
	createJob(t, ctx, c, j)
	pod := onlyPod(t, ctx, c, "policy", "", "a pod", 10*time.Second)
	finishPod(t, ctx, c, pod, 137, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
	pod = onlyPod(t, ctx, c, "policy", pod.Name, "a replacement without back-off", 5*time.Second)
	if f := getJob(t, ctx, c, "policy").Status.Failed; f != 0 {
		t.Errorf("an ignored failure was counted: failed = %d", f)
	}
	finishPod(t, ctx, c, pod, 42)
	controllertest.Until(t, "the job to fail", 20*time.Second, func() bool { return jobCondition(getJob(t, ctx, c, "policy"), batchv1.JobFailed) != nil })
	cond := jobCondition(getJob(t, ctx, c, "policy"), batchv1.JobFailed)
	want := fmt.Sprintf("Container work for pod %s/%s failed with exit code 42 matching FailJob rule at index 0", c.Namespace, pod.Name)
	if cond.Reason != "PodFailurePolicy" || cond.Message != want {
		t.Errorf("Failed condition = %+v, want message %q", cond, want)
	}
}

// A pod of a deleted Job loses the job-tracking finalizer, so it does not linger.
func TestDeletedJobReleasesPods(t *testing.T) {
	c, ctx := start(t)
	j, err := c.Client.BatchV1().Jobs(c.Namespace).Create(ctx, newJob("gone"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Until(t, "a pod", 10*time.Second, func() bool { return len(running(jobPods(t, ctx, c, "gone"))) == 1 })
	c.MustKubectl(t, "", "delete", "job", "gone", "--cascade=foreground", "--timeout=30s")
	controllertest.Until(t, "its pods to go", 20*time.Second, func() bool { return len(jobPods(t, ctx, c, "gone")) == 0 })
	// The pod the garbage collector deleted was not replaced while the Job was going.
	created := 0
	for _, e := range events(t, ctx, c, j) {
		if e.Reason == "SuccessfulCreate" {
			created += int(e.Count)
		}
	}
	if created != 1 {
		t.Errorf("%d pods created for a Job deleted with its one pod", created)
	}
}

// TestAdoptAndRelease, as the conformance test "should adopt matching orphans and release
// non-matching pods": a pod orphaned by removing its owner references is adopted again,
// with the tracking finalizer; one relabelled out of the selector is released, without it.
func TestAdoptAndRelease(t *testing.T) {
	c, ctx := start(t)
	j := newJob("adopt")
	j.Spec.Parallelism = ptr.To[int32](2)
	j.Spec.Completions = ptr.To[int32](4)
	createJob(t, ctx, c, j)
	job := getJob(t, ctx, c, "adopt")
	controllertest.Until(t, "two pods", 10*time.Second, func() bool { return len(running(jobPods(t, ctx, c, "adopt"))) == 2 })
	name := running(jobPods(t, ctx, c, "adopt"))[0].Name
	pods := c.Client.CoreV1().Pods(c.Namespace)
	if _, err := pods.Patch(ctx, name, "application/merge-patch+json", []byte(`{"metadata":{"ownerReferences":null,"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Until(t, "the orphan adopted", 10*time.Second, func() bool {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		ref := metav1.GetControllerOf(p)
		return err == nil && ref != nil && ref.UID == job.UID && slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
	})
	if _, err := pods.Patch(ctx, name, "application/merge-patch+json", []byte(`{"metadata":{"labels":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Until(t, "the relabelled pod released", 10*time.Second, func() bool {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		return err == nil && metav1.GetControllerOf(p) == nil && !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
	})
	controllertest.Until(t, "a replacement", 10*time.Second, func() bool { return len(running(jobPods(t, ctx, c, "adopt"))) == 2 })
}

// TestPodReplacementPolicyFailed: a Job with podReplacementPolicy Failed does not replace
// a pod while it terminates (status.terminating says so), and does once it has failed.
func TestPodReplacementPolicyFailed(t *testing.T) {
	c, ctx := start(t)
	j := newJob("failedonly")
	j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	createJob(t, ctx, c, j)
	pod := onlyPod(t, ctx, c, "failedonly", "", "a pod", 10*time.Second)
	if err := c.Client.CoreV1().Pods(c.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Until(t, "terminating 1", 10*time.Second, func() bool {
		return ptr.Deref(getJob(t, ctx, c, "failedonly").Status.Terminating, 0) == 1
	})
	time.Sleep(2 * time.Second)
	if run := running(jobPods(t, ctx, c, "failedonly")); len(run) != 0 {
		t.Fatalf("a replacement %s while the pod terminates", run[0].Name)
	}
	finishPod(t, ctx, c, pod, 137)
	controllertest.Until(t, "a replacement once the pod failed", 30*time.Second, func() bool {
		return len(running(jobPods(t, ctx, c, "failedonly"))) == 1
	})
	if j := getJob(t, ctx, c, "failedonly"); j.Status.Failed != 1 {
		t.Errorf("failed = %d, want 1", j.Status.Failed)
	}
}

// Two pods that already succeeded are adopted by a Job of one completion (a manual
// selector matching them): the Job counts both, completes, and says so with kube's
// Warning TooManySucceededPods beside Completed.
func TestTooManySucceededPods(t *testing.T) {
	c, ctx := start(t)
	labels := map[string]string{"app": "twice"}
	for _, name := range []string{"done-1", "done-2"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "work", Image: "localhost/minik8s/busybox:v1"}}}}
		p, err := c.Client.CoreV1().Pods(c.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		finishPod(t, ctx, c, *p, 0)
	}
	j := newJob("twice")
	j.Spec.ManualSelector = ptr.To(true)
	j.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	j.Spec.Template.Labels = labels
	createJob(t, ctx, c, j)
	controllertest.Until(t, "completion", 20*time.Second, func() bool { return jobCondition(getJob(t, ctx, c, "twice"), batchv1.JobComplete) != nil })
	j = getJob(t, ctx, c, "twice")
	if j.Status.Succeeded != 2 {
		t.Errorf("succeeded = %d, want both pods counted", j.Status.Succeeded)
	}
	controllertest.Until(t, "the TooManySucceededPods event", 10*time.Second, func() bool {
		return hasEvent(events(t, ctx, c, j), "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
	})
	for _, e := range events(t, ctx, c, j) {
		if e.Reason == "TooManySucceededPods" && e.Type != corev1.EventTypeWarning {
			t.Errorf("TooManySucceededPods is a %s event", e.Type)
		}
	}
	if !hasEvent(events(t, ctx, c, j), "Completed", "Job completed") {
		t.Errorf("no Completed event: %+v", events(t, ctx, c, j))
	}
}

// A pod the API refuses (a ResourceQuota full) is asked for again after a back-off, as
// kube's job controller retries a failed sync from 1 s up to a minute apart: once the
// quota goes, the Job gets its second pod with nothing else changing.
func TestCreateRetriedAfterRefusal(t *testing.T) {
	c, ctx := start(t)
	controllertest.PodQuota(t, c.Client, c.Namespace, 1)
	j := newJob("quota")
	j.Spec.Parallelism = ptr.To[int32](2)
	createJob(t, ctx, c, j)
	j = getJob(t, ctx, c, "quota")
	controllertest.Until(t, "a FailedCreate event and the first pod bound", 20*time.Second, func() bool {
		run := running(jobPods(t, ctx, c, "quota"))
		return hasEvent(events(t, ctx, c, j), "FailedCreate", "Error creating: pods ") && len(run) == 1 && run[0].Spec.NodeName != ""
	})
	time.Sleep(2 * time.Second) // the binding's pod event has woken the Job: now nothing changes
	if err := c.Client.CoreV1().ResourceQuotas(c.Namespace).Delete(ctx, "pods", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Until(t, "the second pod", 30*time.Second, func() bool {
		return len(running(jobPods(t, ctx, c, "quota"))) == 2
	})
}
