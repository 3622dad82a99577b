package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// matchFailurePolicy applies the Job's podFailurePolicy to a failed pod: the action of the
// first rule that matches (its exit codes or its pod conditions), and for FailJob the
// message Kubernetes gives. No policy or no match: "" (count the failure).
func matchFailurePolicy(job *batchv1.Job, pod *corev1.Pod) (batchv1.PodFailurePolicyAction, string) {
	policy := job.Spec.PodFailurePolicy
	if policy == nil || pod.Status.Phase != corev1.PodFailed {
		return "", ""
	}
	for i, rule := range policy.Rules {
		if r := rule.OnExitCodes; r != nil {
			if cs := failedContainer(pod, r); cs != nil {
				return rule.Action, fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %v rule at index %d",
					cs.Name, pod.Namespace, pod.Name, cs.State.Terminated.ExitCode, rule.Action, i)
			}
		}
		for _, pc := range rule.OnPodConditions {
			for _, c := range pod.Status.Conditions {
				status := pc.Status
				if status == "" {
					status = corev1.ConditionTrue
				}
				if c.Type == pc.Type && c.Status == status {
					return rule.Action, fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d", pod.Namespace, pod.Name, c.Type, rule.Action, i)
				}
			}
		}
	}
	return "", ""
}

// failedContainer is the first container that ended with a non-zero exit code the rule
// names (In) or does not name (NotIn).
func failedContainer(pod *corev1.Pod, r *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			cs := &list[i]
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 || (r.ContainerName != nil && *r.ContainerName != cs.Name) {
				continue
			}
			in := slices.Contains(r.Values, t.ExitCode)
			if (r.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn) == in {
				return cs
			}
		}
	}
	return nil
}
