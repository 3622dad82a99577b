package controlplane

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// `kubectl describe` shows what kube-controller-manager's controllers leave on a real
// cluster: the Events' From column and messages.
func TestKubectlDescribeAsOnKube(t *testing.T) {
	c := startClusterWith(t, func(o *Options) { o.LoadBalancerIPPool = "192.0.2.10-192.0.2.20" })
	ctx := context.Background()
	c.createReadyNode(t, "node-1", 10)

	// describeShows waits until `kubectl describe args` has a line matching pattern.
	describeShows := func(t *testing.T, pattern string, args ...string) {
		t.Helper()
		var out string
		waitFor(t, "kubectl describe "+strings.Join(args, " ")+" to show "+pattern, func() bool {
			out, _ = c.kubectl(t, "", append([]string{"describe"}, args...)...)
			return regexpLine(out, pattern)
		})
	}

	t.Run("the disruption controller's Events come from controllermanager", func(t *testing.T) {
		// pkg/controller/disruption/disruption.go: EventSource{Component: "controllermanager"}.
		one := intstr.FromInt32(1)
		if _, err := c.client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "lonely"},
			Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nothing"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		describeShows(t, `^\s+Normal\s+NoPods\s+.*\scontrollermanager\s+No matching pods found$`, "pdb", "lonely")
	})

	t.Run("the service controller's Ensured Event says no more than kube's", func(t *testing.T) {
		// k8s.io/cloud-provider controllers/service/controller.go: "Ensured load balancer".
		if _, err := c.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "lb"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "lb"},
				Ports: []corev1.ServicePort{{Port: 80}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		describeShows(t, `^\s+Normal\s+EnsuredLoadBalancer\s+.*\sservice-controller\s+Ensured load balancer$`, "service", "lb")
	})

}
