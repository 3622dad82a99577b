package quota

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// TestServiceNodePortUsage: node ports count by intent, as Kubernetes' service evaluator
// counts them: every port of a NodePort or LoadBalancer Service, before any is allocated
// (admission sees the Service before its node ports are), only the explicit ones of a
// LoadBalancer that allocates none; ClusterIP Services use none.
func TestServiceNodePortUsage(t *testing.T) {
	svc := func(typ corev1.ServiceType, nodePorts ...int32) *corev1.Service {
		s := &corev1.Service{Spec: corev1.ServiceSpec{Type: typ}}
		for _, np := range nodePorts {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 80, NodePort: np})
		}
		return s
	}
	noAlloc := svc(corev1.ServiceTypeLoadBalancer, 0, 30001)
	noAlloc.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
	for _, c := range []struct {
		name      string
		svc       *corev1.Service
		nodePorts int64
	}{
		{"ClusterIP", svc(corev1.ServiceTypeClusterIP, 0, 0), 0},
		{"NodePort before allocation", svc(corev1.ServiceTypeNodePort, 0, 0), 2},
		{"NodePort allocated", svc(corev1.ServiceTypeNodePort, 30000), 1},
		{"LoadBalancer before allocation", svc(corev1.ServiceTypeLoadBalancer, 0), 1},
		{"LoadBalancer allocating no node ports", noAlloc, 1},
	} {
		got := Usage(corev1.ResourceServicesNodePorts, schema.GroupResource{Resource: "services"}, []any{c.svc}, nil)
		if got.Value() != c.nodePorts {
			t.Errorf("%s: services.nodeports %s, want %d", c.name, got.String(), c.nodePorts)
		}
	}
}

// TestPodCounts: a pod uses quota until it finishes, or until it has been terminating for
// its whole grace period past its deletion time (kube's QuotaV1Pod): a pod stuck on a lost
// node must not keep its replacement out.
func TestPodCounts(t *testing.T) {
	deleting := func(deletedAgo time.Duration, grace int64) *corev1.Pod {
		p := &corev1.Pod{}
		p.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-deletedAgo)}
		p.DeletionGracePeriodSeconds = &grace
		return p
	}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"running", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, true},
		{"succeeded", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, false},
		{"failed", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, false},
		{"terminating within its grace", deleting(10*time.Second, 30), true},
		{"terminating past its grace", deleting(31*time.Second, 30), false},
		{"deletion time not reached", deleting(-20*time.Second, 30), true},
	} {
		if got := PodCounts(c.pod); got != c.want {
			t.Errorf("%s: PodCounts %v, want %v", c.name, got, c.want)
		}
	}
}
