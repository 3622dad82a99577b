package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A container's ports are checked as kube's validateContainerPorts does: names are IANA
// service names and unique in the container, container ports required and in range, host
// ports in range, protocols TCP, UDP or SCTP. kubectl prints the errors joined:
// `The Pod "x" is invalid: * spec.containers[0].ports[1].name: Duplicate value: "http" ...`.
func TestPodContainerPortsValidation(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{defaulted(corev1.Container{Name: "c", Image: "busybox",
			Ports: []corev1.ContainerPort{
				{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP},
				{Name: "http", ContainerPort: 81, Protocol: corev1.ProtocolTCP},
				{Name: "Bad_Name", ContainerPort: 0, Protocol: "ICMP"},
				{ContainerPort: 70000, HostPort: -1, Protocol: corev1.ProtocolUDP},
				{Name: "ok", ContainerPort: 82},
			}})}}}
	got := validatePod(pod).ToAggregate().Error()
	want := `[spec.containers[0].ports[1].name: Duplicate value: "http", ` +
		`spec.containers[0].ports[2].name: Invalid value: "Bad_Name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-), ` +
		`spec.containers[0].ports[2].containerPort: Required value, ` +
		`spec.containers[0].ports[2].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP", ` +
		`spec.containers[0].ports[3].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive, ` +
		`spec.containers[0].ports[3].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive, ` +
		`spec.containers[0].ports[4].protocol: Required value]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
