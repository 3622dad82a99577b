package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/minik8s/minik8s/pkg/agent/staticpod"
)

// updatePodStatus writes a pod's status through pods/status, only when it
// differs from both the pod as last seen and the status last written.
func (a *Agent) updatePodStatus(ctx context.Context, st *podState, pod *corev1.Pod, status corev1.PodStatus) error {
	// A static pod's status shows on its mirror, once there is one; a mirror made anew
	// starts empty, so only what it holds counts.
	static := staticpod.IsStatic(pod)
	if static {
		if pod = a.mirrorOf(pod); pod == nil {
			return nil
		}
	}
	if apiequality.Semantic.DeepEqual(pod.Status, status) ||
		(!static && st.lastStatus != nil && apiequality.Semantic.DeepEqual(*st.lastStatus, status)) {
		return nil
	}
	pods := a.client.CoreV1().Pods(pod.Namespace)
	base := pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		updated := base.DeepCopy()
		updated.Status = withTheirConditions(status, base.Status)
		_, err := pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
		latest, getErr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if latest.UID != pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		base = latest
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile; its worker hears of it from the informer
	}
	if err != nil {
		return fmt.Errorf("update status of pod %s: %w", podKey(pod), err)
	}
	st.lastStatus = status.DeepCopy()
	return nil
}

// withTheirConditions is our status with the conditions other writers own (readiness
// gates, DisruptionTarget ...) as the API has them now: a status computed from an older
// copy of the pod must not undo their writes.
func withTheirConditions(ours, current corev1.PodStatus) corev1.PodStatus {
	out := ours
	out.Conditions = nil
	for _, c := range current.Conditions {
		if !ownedConditions.Has(c.Type) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	for _, c := range ours.Conditions {
		if ownedConditions.Has(c.Type) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out
}
