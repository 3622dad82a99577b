package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// matchFailurePolicy finds the first rule of the Job's podFailurePolicy that a Failed pod
// matches, and says why in Kubernetes' words. nil when no rule matches (the failure counts).
func matchFailurePolicy(policy *batchv1.PodFailurePolicy, pod *corev1.Pod) (*batchv1.PodFailurePolicyAction, string) {
	if policy == nil || pod.Status.Phase != corev1.PodFailed {
		return nil, ""
	}
	for i, rule := range policy.Rules {
		if r := rule.OnExitCodes; r != nil {
			if c, code, ok := matchExitCodes(r, pod); ok {
				return &rule.Action, fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %v rule at index %d", c, pod.Namespace, pod.Name, code, rule.Action, i)
			}
		}
		for _, want := range rule.OnPodConditions {
			status := want.Status
			if status == "" {
				status = corev1.ConditionTrue
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == want.Type && c.Status == status {
					return &rule.Action, fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d", pod.Namespace, pod.Name, c.Type, rule.Action, i)
				}
			}
		}
	}
	return nil, ""
}

// matchExitCodes finds a container that exited non-zero with a code the requirement names
// (In) or does not name (NotIn); exit code 0 never matches.
func matchExitCodes(r *batchv1.PodFailurePolicyOnExitCodesRequirement, pod *corev1.Pod) (string, int32, bool) {
	statuses := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
	for _, s := range statuses {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode == 0 {
			continue
		}
		if r.ContainerName != nil && *r.ContainerName != s.Name {
			continue
		}
		code := s.State.Terminated.ExitCode
		in := slices.Contains(r.Values, code)
		if (r.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn) == in {
			return s.Name, code, true
		}
	}
	return "", 0, false
}
