package hostport

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestAdmission: a pod asking for a host port another pod holds is refused with the
// kubelet's reason and words (the conformance test "Should recreate evicted statefulset"
// makes its pod fail so); other addresses, protocols and ports are free.
func TestAdmission(t *testing.T) {
	pod := func(uid string, ports ...corev1.ContainerPort) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: ports}}}}
	}
	holder := pod("holder", corev1.ContainerPort{HostPort: 21017, ContainerPort: 21017},
		corev1.ContainerPort{HostPort: 53, ContainerPort: 53, Protocol: corev1.ProtocolUDP, HostIP: "10.0.0.1"})
	sidecar := pod("sidecar")
	sidecar.Spec.InitContainers = []corev1.Container{{Name: "s", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Ports: []corev1.ContainerPort{{HostPort: 8080, ContainerPort: 80}}}}
	a := Admission{Others: func() []*corev1.Pod { return []*corev1.Pod{holder, sidecar} }}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want bool
	}{
		{pod("a", corev1.ContainerPort{HostPort: 21017, ContainerPort: 80, Protocol: corev1.ProtocolTCP}), false},
		{pod("b", corev1.ContainerPort{HostPort: 21017, ContainerPort: 80, Protocol: corev1.ProtocolUDP}), true},
		{pod("c", corev1.ContainerPort{HostPort: 53, ContainerPort: 53, Protocol: corev1.ProtocolUDP, HostIP: "10.0.0.2"}), true},
		{pod("d", corev1.ContainerPort{HostPort: 53, ContainerPort: 53, Protocol: corev1.ProtocolUDP}), false},
		{pod("e", corev1.ContainerPort{HostPort: 8080, ContainerPort: 80}), false},
		{pod("f", corev1.ContainerPort{ContainerPort: 21017}), true},
		{holder, true}, // itself
	} {
		ok, reason, msg := a.Admit(tc.pod)
		if ok != tc.want || (!ok && (reason != "NodePorts" || msg != "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports")) {
			t.Errorf("pod %s: admitted %v (%s: %s), want %v", tc.pod.UID, ok, reason, msg, tc.want)
		}
	}
}
