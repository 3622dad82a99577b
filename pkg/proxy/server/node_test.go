package server

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The node's address for the IPv4 proxier is kube-proxy's node IP: InternalIPs before
// ExternalIPs, IPv4 only.
func TestNodeIPv4(t *testing.T) {
	addr := func(typ corev1.NodeAddressType, a string) corev1.NodeAddress {
		return corev1.NodeAddress{Type: typ, Address: a}
	}
	for _, tc := range []struct {
		addrs []corev1.NodeAddress
		want  string
	}{
		{[]corev1.NodeAddress{addr(corev1.NodeHostName, "n1"), addr(corev1.NodeExternalIP, "192.0.2.1"), addr(corev1.NodeInternalIP, "10.0.0.5")}, "10.0.0.5"},
		{[]corev1.NodeAddress{addr(corev1.NodeInternalIP, "fd00::5"), addr(corev1.NodeInternalIP, "10.0.0.6")}, "10.0.0.6"},
		{[]corev1.NodeAddress{addr(corev1.NodeInternalIP, "fd00::5"), addr(corev1.NodeExternalIP, "192.0.2.1")}, "192.0.2.1"},
		{[]corev1.NodeAddress{addr(corev1.NodeHostName, "n1")}, ""},
	} {
		if got := nodeIPv4(&corev1.Node{Status: corev1.NodeStatus{Addresses: tc.addrs}}); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.addrs, got, tc.want)
		}
	}
}
