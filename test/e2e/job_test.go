package e2e

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

const indexedJob = `apiVersion: batch/v1
kind: Job
metadata: {name: idx}
spec:
  completions: 5
  parallelism: 2
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: localhost/minik8s/busybox:v1
        # Succeeds only where the index the controller gave (JOB_COMPLETION_INDEX, from the
        # pod's annotation) is the one in its hostname idx-<index>.
        command: ["sh", "-c", "sleep 2; test \"$(hostname)\" = \"idx-$JOB_COMPLETION_INDEX\""]
`

// TestJobs on a two-node minilab: an Indexed Job of 5 completions with parallelism 2 runs
// real containers, never more than 2 at once, each finding its index in
// JOB_COMPLETION_INDEX and its hostname, and completes without a failure; a CronJob every minute creates a Job within ~70 s.
func TestJobs(t *testing.T) {
	l := upLab(t, "job", 2)
	kubectl := func(args ...string) string { t.Helper(); return mustKubectl(t, l, args...) }
	applyYAML(t, l, indexedJob)

	start := time.Now()
	maxRunning := 0
	var job batchv1.Job
	for {
		var pods corev1.PodList
		kubectlJSON(t, l, &pods, "get", "pods", "-l", "job-name=idx")
		running := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				running++
			}
		}
		maxRunning = max(maxRunning, running)
		job = batchv1.Job{} // Unmarshal into a used struct would keep fields the new JSON omits
		kubectlJSON(t, l, &job, "get", "job", "idx")
		if job.Status.CompletionTime != nil {
			break
		}
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("job not complete after 3 min: %+v", job.Status)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("indexed job of 5 completed in %v", time.Since(start).Round(time.Second))
	if maxRunning > 2 {
		t.Errorf("%d pods ran at once, parallelism is 2", maxRunning)
	}
	if job.Status.CompletedIndexes != "0-4" || job.Status.Succeeded != 5 || job.Status.Failed != 0 {
		t.Errorf("job status %+v", job.Status)
	}
	kubectl("wait", "--for=condition=complete", "job/idx", "--timeout=10s")
	kubectl("create", "cronjob", "tick", "--image=localhost/minik8s/busybox:v1", "--schedule=*/1 * * * *", "--", "sh", "-c", "exit 0")
	start = time.Now()
	for {
		var jobs batchv1.JobList
		kubectlJSON(t, l, &jobs, "get", "jobs")
		found := false
		for _, j := range jobs.Items {
			if strings.HasPrefix(j.Name, "tick-") && j.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"] != "" {
				found = true
			}
		}
		if found {
			break
		}
		if time.Since(start) > 75*time.Second {
			t.Fatalf("no job from the cronjob after 75 s:\n%s", kubectl("get", "cronjob,jobs,events"))
		}
		time.Sleep(time.Second)
	}
	t.Logf("cronjob created a job after %v", time.Since(start).Round(time.Second))
}
