package apiserver

import (
	"context"
	"errors"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeURL: the node API is reached at the node's address of the first preferred type
// it has (--kubelet-preferred-address-types: kubeadm's InternalIP, ExternalIP, Hostname
// unless set) and its daemonEndpoints port, 10250 (kube-apiserver's --kubelet-port) when
// it reports none, as kube's NodeConnectionInfoGetter; a node with none of the types is
// kube's 500 listing its addresses.
func TestNodeURL(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	setNode := func(addrs []corev1.NodeAddress, port int32) {
		t.Helper()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
		if w := do(t, h, "GET", "/api/v1/nodes/node-1", nil); w.Code == http.StatusNotFound {
			if w := do(t, h, "POST", "/api/v1/nodes", n); w.Code != http.StatusCreated {
				t.Fatalf("create node: %d %s", w.Code, w.Body)
			}
		}
		decodeStrict(t, do(t, h, "GET", "/api/v1/nodes/node-1", nil).Body.Bytes(), n)
		n.Status.Addresses, n.Status.DaemonEndpoints.KubeletEndpoint.Port = addrs, port
		if w := do(t, h, "PUT", "/api/v1/nodes/node-1/status", n); w.Code != http.StatusOK {
			t.Fatalf("node status: %d %s", w.Code, w.Body)
		}
	}
	hostname := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-1"}
	internal := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.200.0.11"}
	external := corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "192.0.2.7"}
	for _, tc := range []struct {
		types []corev1.NodeAddressType // nil: the default
		addrs []corev1.NodeAddress
		port  int32
		want  string
	}{
		{nil, []corev1.NodeAddress{hostname, external, internal}, 10250, "10.200.0.11:10250"},
		{nil, []corev1.NodeAddress{hostname, external}, 11250, "192.0.2.7:11250"},
		{nil, []corev1.NodeAddress{hostname}, 0, "node-1:10250"},
		{[]corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalIP}, []corev1.NodeAddress{internal, hostname}, 10250, "node-1:10250"},
	} {
		s.nodeAddressTypes = tc.types
		setNode(tc.addrs, tc.port)
		u, err := s.nodeURL(context.Background(), "node-1")
		if err != nil || u.Scheme != "https" || u.Host != tc.want {
			t.Errorf("types %v, addresses %v, port %d: %v %v; want https://%s", tc.types, tc.addrs, tc.port, u, err, tc.want)
		}
	}
	s.nodeAddressTypes = nil
	setNode([]corev1.NodeAddress{{Type: corev1.NodeInternalDNS, Address: "node-1.example"}}, 10250)
	_, err := s.nodeURL(context.Background(), "node-1")
	var st apierrors.APIStatus
	want := "no preferred addresses found; known addresses: [{InternalDNS node-1.example}]"
	if !errors.As(err, &st) || st.Status().Code != 500 || st.Status().Reason != "" || st.Status().Message != want {
		t.Errorf("node with no preferred address: %v; want 500 %q", err, want)
	}
}
