package controlplane

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestComponentsWriteAsThemselves: the controllers write as kube-controller-manager and the
// scheduler as kube-scheduler, the managers Kubernetes' components are in the managed
// fields of what they wrote (named after their user agents).
func TestComponentsWriteAsThemselves(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	c.mustKubectl(t, "", "create", "deployment", "web", "--image=localhost/minik8s/netexec:v1")
	// A pod no node fits: the scheduler writes its PodScheduled=False status.
	if _, err := c.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nowhere"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"no": "such-node"}, Containers: []corev1.Container{{Name: "c", Image: "img"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	managers := func(selector, name string) []string {
		list, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil
		}
		var names []string
		for _, p := range list.Items {
			if name == "" || p.Name == name {
				for _, f := range p.ManagedFields {
					names = append(names, f.Manager)
				}
			}
		}
		return names
	}
	waitFor(t, "the deployment's pod, written by the controller manager", func() bool {
		return slices.Contains(managers("app=web", ""), "kube-controller-manager")
	})
	waitFor(t, "the unschedulable pod's status, written by the scheduler", func() bool {
		return slices.Contains(managers("", "nowhere"), "kube-scheduler")
	})
}
