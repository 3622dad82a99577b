package loadbalancer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controllers/loadbalancer"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestParsePool(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		first   string
	}{
		{"10.200.0.200-10.200.0.201", "", "10.200.0.200"},
		{"192.0.2.0/30", "", "192.0.2.1"},
		{"10.0.0.9-10.0.0.1", "FIRST <= LAST", ""},
		{"192.0.2.0/31", "at least 4 addresses", ""},
		{"nonsense", "want an IPv4 CIDR", ""},
	} {
		_, err := loadbalancer.ParsePool(tc.in)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParsePool(%q) = %v, want error %q", tc.in, err, tc.err)
		}
	}
}

func lbService(name, ip string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerIP: ip, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80}}}}
}

func ingressOf(c kubernetes.Interface, name string) string {
	svc, err := c.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
		return ""
	}
	return svc.Status.LoadBalancer.Ingress[0].IP
}

func waitIngress(t *testing.T, c kubernetes.Interface, name, want string) {
	t.Helper()
	controllertest.Eventually(t, "service "+name+"'s ingress", 15*time.Second, func() string { return ingressOf(c, name) }, want)
}

func TestAddressesFromThePool(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) { o.LoadBalancerIPPool = "10.200.0.200-10.200.0.201" })
	ctx := context.Background()
	svcs := cl.Client.CoreV1().Services("default")
	for _, s := range []*corev1.Service{lbService("asks", "10.200.0.201"), lbService("first", ""), lbService("third", "")} {
		if _, err := svcs.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	waitIngress(t, cl.Client, "asks", "10.200.0.201")
	// The last address goes to one of the other two: which one is not ordered (a controller
	// started on a warm cache gets the Services in no particular order, as in Kubernetes).
	got, left := "first", "third"
	controllertest.WaitFor(t, "first or third to get 10.200.0.200", 15*time.Second, func() (bool, string) {
		if ingressOf(cl.Client, left) == "10.200.0.200" {
			got, left = left, got
		}
		return ingressOf(cl.Client, got) == "10.200.0.200", fmt.Sprintf("first %q, third %q", ingressOf(cl.Client, "first"), ingressOf(cl.Client, "third"))
	})
	time.Sleep(500 * time.Millisecond)
	if ip := ingressOf(cl.Client, left); ip != "" {
		t.Errorf("a third Service (%s) got %s from a pool of two", left, ip)
	}
	controllertest.WaitFor(t, "an event saying the pool is exhausted for "+left, 10*time.Second, func() (bool, string) {
		out := cl.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name="+left)
		return strings.Contains(out, "LoadBalancerIPPoolExhausted"), out
	})
	if out := cl.MustKubectl(t, "", "get", "svc", got); !strings.Contains(out, "10.200.0.200") {
		t.Errorf("kubectl get svc shows no EXTERNAL-IP:\n%s", out)
	}
	// Freed by turning that Service into a ClusterIP one, the address goes to the other.
	cl.MustKubectl(t, "", "patch", "svc", got, "--type=merge", "-p", `{"spec":{"type":"ClusterIP"}}`)
	waitIngress(t, cl.Client, got, "")
	waitIngress(t, cl.Client, left, "10.200.0.200")
	// As the cloud service controller's: its load balancer deleted, said in two Events.
	controllertest.WaitFor(t, "DeletingLoadBalancer and DeletedLoadBalancer Events for "+got+" turned ClusterIP", 10*time.Second, func() (bool, string) {
		out := cl.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name="+got, "-o",
			`jsonpath={range .items[*]}{.type}/{.reason}/{.message}{"\n"}{end}`)
		return strings.Contains(out, "Normal/DeletingLoadBalancer/Deleting load balancer\n") && strings.Contains(out, "Normal/DeletedLoadBalancer/Deleted load balancer\n"), out
	})
}

func TestNoPoolStaysPending(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	if _, err := cl.Client.CoreV1().Services("default").Create(context.Background(), lbService("lonely", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "a Warning event for a LoadBalancer Service without a pool", 10*time.Second, func() (bool, string) {
		out := cl.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name=lonely")
		return strings.Contains(out, "NoLoadBalancerIPPool"), out
	})
	if out := cl.MustKubectl(t, "", "get", "svc", "lonely"); !strings.Contains(out, "<pending>") {
		t.Errorf("kubectl get svc:\n%s", out)
	}
}
