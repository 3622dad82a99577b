// Package disruption marks a pod that a controller is about to delete with the
// DisruptionTarget condition saying why, as Kubernetes' scheduler (preemption) and
// taint-eviction-controller do before their DELETE: a Job's podFailurePolicy
// (onPodConditions) and `kubectl describe pod` read it.
package disruption

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Mark adds DisruptionTarget=True with reason and message to the pod's status, unless the
// pod has it with that reason already. As kube's PatchPodStatus, the strategic-merge patch
// of the status subresource names the conditions' order, so a new condition comes last
// (without it the server put it first; one already there keeps its place), and the
// condition observes the pod's generation (PodObservedGenerationTracking).
func Mark(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, reason, message string) error {
	var order []map[string]corev1.PodConditionType
	had := false
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == reason {
			return nil
		}
		had = had || c.Type == corev1.DisruptionTarget
		order = append(order, map[string]corev1.PodConditionType{"type": c.Type})
	}
	if !had {
		order = append(order, map[string]corev1.PodConditionType{"type": corev1.DisruptionTarget})
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"$setElementOrder/conditions": order,
		"conditions": []corev1.PodCondition{{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason, Message: message,
			ObservedGeneration: pod.Generation, LastTransitionTime: metav1.Now(),
		}},
	}})
	if err != nil {
		return err
	}
	_, err = client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}
