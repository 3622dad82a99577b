// Package nodeaddr reads a Node's addresses from its status.
package nodeaddr

import (
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// DefaultAPITypes is miniapi's --kubelet-preferred-address-types: kubeadm's order.
// kube-apiserver's own default puts Hostname first, but minilet registers its node name as
// its Hostname address, and that name seldom resolves where miniapi runs.
var DefaultAPITypes = []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName}

// defaultAPIPort is kube-apiserver's --kubelet-port: the node API's port when the node
// reports none.
const defaultAPIPort = 10250

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

// APIHostPort is where the node's API answers, as kube's NodeConnectionInfoGetter finds it:
// at its address of the first of types (none: DefaultAPITypes) it has and its daemonEndpoints
// port.
func APIHostPort(n *corev1.Node, types []corev1.NodeAddressType) (string, error) {
	if len(types) == 0 {
		types = DefaultAPITypes
	}
	host, err := Preferred(n, types)
	if err != nil {
		return "", err
	}
	port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port <= 0 {
		port = defaultAPIPort
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port))), nil
}
