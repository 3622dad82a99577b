// Package nodeaddr reads a Node's addresses from its status.
package nodeaddr

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Of is the node's first address of type t, "" when it has none.
func Of(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return ""
}

// Preferred is the node's address of the first of types it has, as kube's
// GetPreferredNodeAddress picks where kube-apiserver reaches a kubelet; an error in its
// words when it has none.
func Preferred(n *corev1.Node, types []corev1.NodeAddressType) (string, error) {
	for _, t := range types {
		if a := Of(n, t); a != "" {
			return a, nil
		}
	}
	return "", fmt.Errorf("no preferred addresses found; known addresses: %v", n.Status.Addresses)
}
