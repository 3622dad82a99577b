package replicaset

import (
	"context"

	"github.com/minik8s/minik8s/internal/controller/controllerref"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// claimPods returns the pods set controls, adopting matching orphans and releasing pods
// relabelled out of its selector (they are then replaced).
func (c *Controller) claimPods(ctx context.Context, set *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	return controllerref.Claim(ctx, set, c.kind.gvk, c.kind.fresh(set.Namespace), selector, pods, func(ctx context.Context, pod *corev1.Pod, patch []byte) error {
		_, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}
