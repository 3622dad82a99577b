package servicepods

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A named targetPort resolves among the pod's containers, then its sidecars (init
// containers that restart Always), as kube's endpoint controllers: a port named on a plain
// init container or over another protocol does not count.
func TestTargetPortNamedOnSidecar(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "setup", Ports: []corev1.ContainerPort{{Name: "setup", ContainerPort: 7000, Protocol: corev1.ProtocolTCP}}},
			{Name: "proxy", RestartPolicy: &always, Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001, Protocol: corev1.ProtocolTCP}}},
		},
		Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}},
	}}
	for _, tc := range []struct {
		target   intstr.IntOrString
		protocol corev1.Protocol
		want     int32
		found    bool
	}{
		{intstr.FromString("http"), corev1.ProtocolTCP, 8080, true},
		{intstr.FromString("proxy"), corev1.ProtocolTCP, 15001, true},
		{intstr.FromString("setup"), corev1.ProtocolTCP, 0, false},
		{intstr.FromString("http"), corev1.ProtocolUDP, 0, false},
		{intstr.FromInt32(9090), corev1.ProtocolTCP, 9090, true},
	} {
		got, err := TargetPort(pod, &corev1.ServicePort{Port: 80, TargetPort: tc.target, Protocol: tc.protocol})
		if (err == nil) != tc.found || got != tc.want {
			t.Errorf("targetPort %s/%s: %d, %v; want %d (found %v)", tc.target.String(), tc.protocol, got, err, tc.want, tc.found)
		}
	}
}
