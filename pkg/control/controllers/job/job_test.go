package job_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// kubelet plays the nodes for the Job's pods: each new pod runs, and after a moment ends
// with the exit code outcome gives (nil: it keeps running). It reports the most pods it
// saw running at once.
type kubelet struct {
	mu      sync.Mutex
	running map[string]bool
	most    int
	pods    []*corev1.Pod
}

func startKubelet(t *testing.T, c kubernetes.Interface, outcome func(*corev1.Pod) *int32) *kubelet {
	t.Helper()
	k := &kubelet{running: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactory(c, 0)
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		pod := obj.(*corev1.Pod)
		k.mu.Lock()
		k.pods = append(k.pods, pod)
		k.running[pod.Name] = true
		k.most = max(k.most, len(k.running))
		k.mu.Unlock()
		code := outcome(pod)
		go func() {
			time.Sleep(150 * time.Millisecond)
			setPhase(ctx, c, pod, code)
			if code != nil {
				k.mu.Lock()
				delete(k.running, pod.Name)
				k.mu.Unlock()
			}
		}()
	}, DeleteFunc: func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			k.mu.Lock()
			delete(k.running, pod.Name)
			k.mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	return k
}

func setPhase(ctx context.Context, c kubernetes.Interface, pod *corev1.Pod, code *int32) {
	_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := c.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		if code != nil {
			p.Status.Phase = corev1.PodSucceeded
			if *code != 0 {
				p.Status.Phase = corev1.PodFailed
			}
			state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: *code, FinishedAt: now}}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: state}}
		_, err = c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

func exits(code int32) func(*corev1.Pod) *int32 { return func(*corev1.Pod) *int32 { return &code } }

func job(name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "localhost/minik8s/busybox:v1"}}}}},
	}
}

func waitCondition(t *testing.T, c kubernetes.Interface, name string, ct batchv1.JobConditionType, reason string) *batchv1.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := c.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			for _, cond := range j.Status.Conditions {
				if cond.Type == ct && cond.Status == corev1.ConditionTrue && cond.Reason == reason {
					return j
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: no %s condition with reason %s: %v %+v", name, ct, reason, err, j.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestIndexedJobCompletes(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	k := startKubelet(t, cl.Client, exits(0))
	j := job("indexed")
	j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](5), ptr.To[int32](2)
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	if _, err := cl.Client.BatchV1().Jobs("default").Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cl.MustKubectl(t, "", "wait", "--for=condition=complete", "job/indexed", "--timeout=60s")
	done := waitCondition(t, cl.Client, "indexed", batchv1.JobComplete, "CompletionsReached")
	if done.Status.CompletedIndexes != "0-4" || done.Status.Succeeded != 5 || done.Status.Active != 0 || done.Status.CompletionTime == nil {
		t.Errorf("status %+v", done.Status)
	}
	k.mu.Lock()
	most, pods := k.most, k.pods
	k.mu.Unlock()
	if most > 2 {
		t.Errorf("%d pods ran at once with parallelism 2", most)
	}
	if len(pods) != 5 {
		t.Errorf("%d pods created for 5 completions", len(pods))
	}
	for _, p := range pods {
		idx := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		if p.Spec.Hostname != "indexed-"+idx || !strings.HasPrefix(p.Name, "indexed-"+idx+"-") || len(p.Spec.Containers[0].Env) == 0 ||
			p.Spec.Containers[0].Env[0].Name != "JOB_COMPLETION_INDEX" {
			t.Errorf("pod %s: index %q hostname %q env %v", p.Name, idx, p.Spec.Hostname, p.Spec.Containers[0].Env)
		}
	}
	// Counted pods are released: no finalizer is left.
	list, err := cl.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=indexed"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if len(p.Finalizers) != 0 {
			t.Errorf("pod %s keeps finalizers %v", p.Name, p.Finalizers)
		}
	}
	out := cl.MustKubectl(t, "", "get", "job", "indexed")
	if row := strings.Join(strings.Fields(out), " "); !strings.Contains(row, "indexed Complete 5/5") {
		t.Errorf("kubectl get job:\n%s", out)
	}
	events := cl.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name=indexed")
	for _, want := range []string{"SuccessfulCreate", "Created pod: indexed-0-", "Completed", "Job completed"} {
		if !strings.Contains(events, want) {
			t.Errorf("events lack %q:\n%s", want, events)
		}
	}
}

func TestJobFailures(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	startKubelet(t, cl.Client, func(p *corev1.Pod) *int32 {
		switch {
		case strings.HasPrefix(p.Name, "policy-"):
			return ptr.To[int32](42)
		case strings.HasPrefix(p.Name, "backoff-"):
			return ptr.To[int32](1)
		}
		return nil // deadline-: runs for ever
	})
	ctx := context.Background()
	backoff := job("backoff")
	backoff.Spec.BackoffLimit = ptr.To[int32](0)
	policy := job("policy")
	policy.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:      batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
	}}}
	deadline := job("deadline")
	deadline.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
	for _, j := range []*batchv1.Job{backoff, policy, deadline} {
		if _, err := cl.Client.BatchV1().Jobs("default").Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if j := waitCondition(t, cl.Client, "backoff", batchv1.JobFailed, "BackoffLimitExceeded"); j.Status.Failed != 1 {
		t.Errorf("backoff: failed %d", j.Status.Failed)
	}
	j := waitCondition(t, cl.Client, "policy", batchv1.JobFailed, "PodFailurePolicy")
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && !strings.Contains(c.Message, "failed with exit code 42 matching FailJob rule at index 0") {
			t.Errorf("policy failure message %q", c.Message)
		}
	}
	waitCondition(t, cl.Client, "deadline", batchv1.JobFailed, "DeadlineExceeded")
	deadline2, _ := cl.Client.BatchV1().Jobs("default").Get(ctx, "deadline", metav1.GetOptions{})
	if deadline2.Status.Active != 0 {
		t.Errorf("a job past its deadline keeps %d active pods", deadline2.Status.Active)
	}
	out := cl.MustKubectl(t, "", "get", "jobs")
	if strings.Count(out, "Failed") != 3 {
		t.Errorf("kubectl get jobs:\n%s", out)
	}
}

func TestSuspendAndResume(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	startKubelet(t, cl.Client, func(*corev1.Pod) *int32 { return nil })
	ctx := context.Background()
	j := job("later")
	j.Spec.Suspend = ptr.To(true)
	j.Spec.Parallelism = ptr.To[int32](2)
	j.Spec.Completions = ptr.To[int32](2)
	if _, err := cl.Client.BatchV1().Jobs("default").Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, cl.Client, "later", batchv1.JobSuspended, "JobSuspended")
	active := func() int {
		list, _ := cl.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=later"})
		n := 0
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	if n := active(); n != 0 {
		t.Fatalf("a suspended job has %d pods", n)
	}
	cl.MustKubectl(t, "", "patch", "job", "later", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
	deadline := time.Now().Add(20 * time.Second)
	for active() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("resumed job has %d pods, want 2", active())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cl.MustKubectl(t, "", "patch", "job", "later", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	for active() != 0 {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("suspended again, the job keeps %d pods", active())
		}
		time.Sleep(50 * time.Millisecond)
	}
	got, _ := cl.Client.BatchV1().Jobs("default").Get(ctx, "later", metav1.GetOptions{})
	if got.Status.Failed != 0 {
		t.Errorf("pods deleted for suspension counted as %d failures", got.Status.Failed)
	}
}
