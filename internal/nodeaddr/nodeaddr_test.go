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

// TestPreferred: the first address of the first type the node has, in the order asked
// for (kube's GetPreferredNodeAddress); none: kube's error listing the node's addresses.
func TestPreferred(t *testing.T) {
	n := &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.200.0.11"},
		{Type: corev1.NodeHostName, Address: "node-1"},
		{Type: corev1.NodeExternalIP, Address: "192.0.2.7"},
	}}}
	for _, tc := range []struct {
		types []corev1.NodeAddressType
		want  string
	}{
		{[]corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalIP}, "node-1"},
		{[]corev1.NodeAddressType{corev1.NodeInternalDNS, corev1.NodeExternalIP, corev1.NodeInternalIP}, "192.0.2.7"},
		{[]corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeHostName}, "10.200.0.11"},
	} {
		if got, err := Preferred(n, tc.types); got != tc.want || err != nil {
			t.Errorf("Preferred(%v) = %q, %v; want %q", tc.types, got, err, tc.want)
		}
	}
	_, err := Preferred(n, []corev1.NodeAddressType{corev1.NodeInternalDNS})
	want := "no preferred addresses found; known addresses: [{InternalIP 10.200.0.11} {Hostname node-1} {ExternalIP 192.0.2.7}]"
	if err == nil || err.Error() != want {
		t.Errorf("no InternalDNS: %v; want %q", err, want)
	}
	if _, err := Preferred(&corev1.Node{}, []corev1.NodeAddressType{corev1.NodeInternalIP}); err == nil ||
		err.Error() != "no preferred addresses found; known addresses: []" {
		t.Errorf("no addresses: %v", err)
	}
}
