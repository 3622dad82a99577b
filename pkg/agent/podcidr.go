package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// AwaitPodCIDR is for a minilet started without --pod-cidr: it registers the Node if it
// is new and waits for miniapi's node IPAM controller to give it spec.podCIDR, which CNI
// then hands out.
func AwaitPodCIDR(ctx context.Context, client kubernetes.Interface, nodeName string, log *slog.Logger) (string, error) {
	nodes := client.CoreV1().Nodes()
	_, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("register node %s: %w", nodeName, err)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for waited := 0; ; waited++ {
		node, err := nodes.Get(ctx, nodeName, metav1.GetOptions{})
		if err == nil && node.Spec.PodCIDR != "" {
			log.Info("using the pod CIDR miniapi assigned", "node", nodeName, "podCIDR", node.Spec.PodCIDR)
			return node.Spec.PodCIDR, nil
		}
		if waited%10 == 0 {
			log.Info("waiting for miniapi to assign this node a pod CIDR (no --pod-cidr given)", "node", nodeName, "err", err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-tick.C:
		}
	}
}
