package quota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
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
