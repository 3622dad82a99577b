package job

import (
	"github.com/minik8s/minik8s/internal/jobutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons and messages of the Job's conditions and Events, as Kubernetes writes them.
const (
	reasonBackoffLimitExceeded = "BackoffLimitExceeded"
	reasonDeadlineExceeded     = "DeadlineExceeded"
	reasonPodFailurePolicy     = "PodFailurePolicy"
	reasonCompletionsReached   = "CompletionsReached"

	msgBackoffLimitExceeded = "Job has reached the specified backoff limit"
	msgDeadlineExceeded     = "Job was active longer than specified deadline"
	msgCompletionsReached   = "Reached expected number of succeeded pods"

	msgMaxFailedIndexesExceeded = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes            = "Job has failed indexes"
)

// setCondition sets a condition, keeping its transition time when its status stays.
func setCondition(job *batchv1.Job, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) {
	if c := jobutil.Condition(job, t); c != nil {
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message, c.LastProbeTime = status, reason, message, now
		return
	}
	job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{
		Type: t, Status: status, Reason: reason, Message: message, LastProbeTime: now, LastTransitionTime: now,
	})
}
