package scheduler_test

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// TestDeclaredFeaturesAgainstMiniapi: a pod with a RestartAllContainers rule needs the
// node feature RestartAllContainersOnContainerExits; on a node not declaring it the pod
// stays pending with kube-scheduler's message, and the node's declaring it (a node update
// of status.declaredFeatures alone) lets it in at once.
func TestDeclaredFeaturesAgainstMiniapi(t *testing.T) {
	c := controlplanetest.Start(t, nil)
	ctx := context.Background()
	pods := c.Client.CoreV1().Pods("default")
	c.CreateReadyNode(t, "n1", 110, map[string]string{corev1.LabelHostname: "n1"})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "restarter"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "img", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyNever),
		RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "0/1 nodes are available: 1 node(s) didn't match Pod's required features. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	waitFor(t, "the pod unschedulable for want of a declared feature", func() (bool, string) {
		p, _ := pods.Get(ctx, "restarter", metav1.GetOptions{})
		for _, cd := range p.Status.Conditions {
			if cd.Type == corev1.PodScheduled && cd.Status == corev1.ConditionFalse {
				return cd.Message == want, cd.Message
			}
		}
		return false, "no PodScheduled condition"
	})
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.DeclaredFeatures = []string{"RestartAllContainersOnContainerExits"}
		_, err = c.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod bound once the node declares the feature", func() (bool, string) {
		p, _ := pods.Get(ctx, "restarter", metav1.GetOptions{})
		return p.Spec.NodeName == "n1", p.Spec.NodeName
	})
}
