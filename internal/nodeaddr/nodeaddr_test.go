package nodeaddr

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestOf: the first address of the type asked for, "" when there is none.
func TestOf(t *testing.T) {
	n := &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: "node-1"},
		{Type: corev1.NodeInternalIP, Address: "10.200.0.11"},
		{Type: corev1.NodeInternalIP, Address: "10.200.0.12"},
	}}}
	if got := Of(n, corev1.NodeInternalIP); got != "10.200.0.11" {
		t.Errorf("InternalIP = %q, want the first, 10.200.0.11", got)
	}
	if got := Of(n, corev1.NodeExternalIP); got != "" {
		t.Errorf("ExternalIP = %q, want none", got)
	}
}
