package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// `kubectl describe` shows what kube-controller-manager's controllers leave on a real
// cluster: the Events' From column and messages, and the Endpoints' and EndpointSlices'
// last-change-trigger-time annotation.
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

	t.Run("Endpoints and EndpointSlices carry the last change's trigger time", func(t *testing.T) {
		// pkg/controller/endpoint/endpoints_controller.go and k8s.io/endpointslice
		// reconciler.go: the Service's creation when it is new, then the Ready transition
		// of the pod that changed.
		svc, err := c.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		annotation := `^Annotations:\s+endpoints\.kubernetes\.io/last-change-trigger-time: `
		created := svc.CreationTimestamp.UTC().Format(time.RFC3339Nano)
		describeShows(t, annotation+created+`$`, "endpoints", "web")
		describeShows(t, annotation+created+`$`, "endpointslices", "-l", "kubernetes.io/service-name=web")

		pod, err := c.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "localhost/minik8s/netexec:v1"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ready := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, "10.244.1.7"
		pod.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.7"}}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ready}}
		if _, err := c.client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		describeShows(t, annotation+`2026-01-02T03:04:05Z$`, "endpoints", "web")
		describeShows(t, annotation+`2026-01-02T03:04:05Z$`, "endpointslices", "-l", "kubernetes.io/service-name=web")
	})
}
