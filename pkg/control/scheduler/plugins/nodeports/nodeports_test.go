package nodeports

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
)

func withPort(p *corev1.Pod, ip string, proto corev1.Protocol, port int32) *corev1.Pod {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 80, HostPort: port, HostIP: ip, Protocol: proto})
	return p
}

func TestNodePorts(t *testing.T) {
	snap := schedtest.Snapshot([]*corev1.Node{schedtest.Node("n1", nil)},
		withPort(schedtest.On(schedtest.Pod("a", nil, 0), "n1"), "10.0.0.1", corev1.ProtocolTCP, 8080))
	for _, tc := range []struct {
		name  string
		ip    string
		proto corev1.Protocol
		port  int32
		want  string
	}{
		{"same ip and port", "10.0.0.1", "", 8080, ErrReason},
		{"wildcard ip clashes with any", "", corev1.ProtocolTCP, 8080, ErrReason},
		{"another ip", "10.0.0.2", corev1.ProtocolTCP, 8080, ""},
		{"another protocol", "10.0.0.1", corev1.ProtocolUDP, 8080, ""},
		{"another port", "", corev1.ProtocolTCP, 8081, ""},
	} {
		if got := schedtest.Filter(Plugin{}, snap, withPort(schedtest.Pod("p", nil, 0), tc.ip, tc.proto, tc.port))["n1"]; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
