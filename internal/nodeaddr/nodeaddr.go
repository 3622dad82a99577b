// Package nodeaddr reads a Node's addresses from its status.
package nodeaddr

import corev1 "k8s.io/api/core/v1"

// Of is the node's first address of type t, "" when it has none.
func Of(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return ""
}
