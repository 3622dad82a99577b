package e2e

import (
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/jobutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

const perIndexJobs = `apiVersion: batch/v1
kind: Job
metadata: {name: perindex}
spec:
  completions: 3
  parallelism: 2
  completionMode: Indexed
  backoffLimitPerIndex: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: localhost/minik8s/busybox:v1
        command: ["sh", "-c", "sleep 1; test \"$JOB_COMPLETION_INDEX\" != 1 || exit 3"]
---
apiVersion: batch/v1
kind: Job
metadata: {name: leader}
spec:
  completions: 3
  parallelism: 3
  completionMode: Indexed
  successPolicy:
    rules:
    - succeededIndexes: "0"
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: localhost/minik8s/busybox:v1
        # The leader (index 0) ends, the workers would run for 5 minutes.
        command: ["sh", "-c", "test \"$JOB_COMPLETION_INDEX\" = 0 || sleep 300"]
`

// TestJobPolicies on a one-node minilab with real pods: with backoffLimitPerIndex 1, index 1
// fails twice and the Job fails with FailedIndexes and failedIndexes "1" once the other
// indexes succeeded; a Job whose successPolicy asks only for index 0 completes with reason
// SuccessPolicy and its other pods are deleted.
func TestJobPolicies(t *testing.T) {
	l := upLab(t, "jobidx", 1)
	kubectl := func(args ...string) string { t.Helper(); return mustKubectl(t, l, args...) }
	applyYAML(t, l, perIndexJobs)
	start := time.Now()
	var perIndex, leader batchv1.Job
	for !jobutil.Finished(&perIndex) || !jobutil.Finished(&leader) {
		if time.Since(start) > 90*time.Second {
			t.Fatalf("jobs not ended after 90 s:\n%s", kubectl("get", "jobs,pods", "-o", "wide"))
		}
		time.Sleep(time.Second)
		// Fresh values each round: Unmarshal into a used struct keeps the fields the new
		// JSON omits (status.active once it is 0), and the test would judge a stale count.
		perIndex, leader = batchv1.Job{}, batchv1.Job{}
		kubectlJSON(t, l, &perIndex, "get", "job", "perindex")
		kubectlJSON(t, l, &leader, "get", "job", "leader")
	}
	t.Logf("both jobs ended after %v", time.Since(start).Round(time.Second))
	last := func(j *batchv1.Job) batchv1.JobCondition { return j.Status.Conditions[len(j.Status.Conditions)-1] }
	if c := last(&perIndex); c.Type != batchv1.JobFailed || c.Reason != "FailedIndexes" || c.Message != "Job has failed indexes" {
		t.Errorf("per-index job ended with %+v", c)
	}
	if st := perIndex.Status; st.FailedIndexes == nil || *st.FailedIndexes != "1" || st.CompletedIndexes != "0,2" || st.Failed != 2 {
		t.Errorf("per-index job status %+v", st)
	}
	if c := last(&leader); c.Type != batchv1.JobComplete || c.Reason != "SuccessPolicy" || c.Message != "Matched rules at index 0" {
		t.Errorf("success-policy job ended with %+v", c)
	}
	if st := leader.Status; st.CompletedIndexes != "0" || st.Active != 0 {
		t.Errorf("success-policy job status %+v", st)
	}
	var pods corev1.PodList
	kubectlJSON(t, l, &pods, "get", "pods", "-l", "job-name=leader")
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			t.Errorf("worker %s still runs after the success policy was met", p.Name)
		}
	}
}
