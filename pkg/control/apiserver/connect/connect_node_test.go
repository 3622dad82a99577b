package connect

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestNodeURL: the node API is reached at the node's address of the first preferred type
// it has (--kubelet-preferred-address-types: kubeadm's InternalIP, ExternalIP, Hostname
// unless set) and its daemonEndpoints port, 10250 (kube-apiserver's --kubelet-port) when
// it reports none, as kube's NodeConnectionInfoGetter; a node with none of the types is
// kube's 500 listing its addresses.
func TestNodeURL(t *testing.T) {
	h := newTestHandler(t)
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
		h.NodeAddressTypes = tc.types
		setNode(t, h, tc.addrs, tc.port)
		u, err := h.nodeURL(context.Background(), "node-1")
		if err != nil || u.Scheme != "https" || u.Host != tc.want {
			t.Errorf("types %v, addresses %v, port %d: %v %v; want https://%s", tc.types, tc.addrs, tc.port, u, err, tc.want)
		}
	}
	h.NodeAddressTypes = nil
	setNode(t, h, []corev1.NodeAddress{{Type: corev1.NodeInternalDNS, Address: "node-1.example"}}, 10250)
	_, err := h.nodeURL(context.Background(), "node-1")
	var st apierrors.APIStatus
	want := "no preferred addresses found; known addresses: [{InternalDNS node-1.example}]"
	if !errors.As(err, &st) || st.Status().Code != 500 || st.Status().Reason != "" || st.Status().Message != want {
		t.Errorf("node with no preferred address: %v; want 500 %q", err, want)
	}
}

// Which node hosts nodes/proxy reaches: those whose every address is global unicast (a
// private one is), as kube's isProxyableHostname.
func TestProxyableNodeHost(t *testing.T) {
	for host, want := range map[string]string{
		"10.200.0.11": "", "192.0.2.7": "", "2001:db8::1": "",
		"127.0.0.1": "address not allowed", "::1": "address not allowed", "0.0.0.0": "address not allowed",
		"169.254.169.254": "address not allowed", "fe80::1": "address not allowed", "224.0.0.1": "address not allowed",
		"localhost": "address not allowed",
	} {
		err := proxyableNodeHost(context.Background(), host)
		if (err == nil) != (want == "") || (err != nil && err.Error() != want) {
			t.Errorf("%s: %v; want %q", host, err, want)
		}
	}
	if err := proxyableNodeHost(context.Background(), "node-1.invalid"); err == nil {
		t.Error("a host name that does not resolve is proxyable")
	}
}

// TestNodesProxyID: nodes/ID/proxy takes ID as NAME, NAME:PORT or SCHEME:NAME:PORT, as
// kube's node ResourceLocation: no port or the node API's own goes to the node API (https,
// miniapi's client certificate), another port to that port and scheme (http unless named)
// on the node's host through the proxy transport; any other ID is kube's 400, and an
// unknown node is named without the scheme and port.
func TestNodesProxyID(t *testing.T) {
	h := newTestHandler(t)
	setNode(t, h, []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.200.0.11"}}, 10250)
	for id, want := range map[string]string{
		"node-1":            "node API https://10.200.0.11:10250",
		"node-1:10250":      "node API https://10.200.0.11:10250",
		"http:node-1:10250": "node API https://10.200.0.11:10250",
		"node-1:8080":       "proxy http://10.200.0.11:8080",
		"http:node-1:8080":  "proxy http://10.200.0.11:8080",
		"https:node-1:4194": "proxy https://10.200.0.11:4194",
	} {
		loc, nodeAPI, err := h.nodeProxyLocation(context.Background(), id)
		got := fmt.Sprint(err)
		if err == nil {
			got = map[bool]string{true: "node API ", false: "proxy "}[nodeAPI] + loc.String()
		}
		if got != want {
			t.Errorf("%s: %s; want %s", id, got, want)
		}
	}
	for id, want := range map[string]string{
		"ftp:node-1:21":   `400 invalid node request "ftp:node-1:21"`,
		"a:node-1:80:1":   `400 invalid node request "a:node-1:80:1"`,
		":8080":           `400 invalid node request ":8080"`,
		"node-2:8080":     `404 nodes "node-2" not found`,
		"https:node-2:80": `404 nodes "node-2" not found`,
	} {
		r := httptest.NewRequest("GET", "/api/v1/nodes/"+id+"/proxy/healthz", nil)
		ri, err := filters.RequestInfoOf(r)
		w := httptest.NewRecorder()
		if err != nil || !h.Serve(w, r, ri) {
			t.Fatalf("nodes/%s/proxy not served: %v", id, err)
		}
		st := apitest.ResponseStatus(t, w.Body.Bytes())
		if got := fmt.Sprintf("%d %s", w.Code, st.Message); got != want {
			t.Errorf("nodes/%s/proxy: %s; want %s", id, got, want)
		}
	}
}

// newTestHandler is a Handler over a store of its own holding the built-in resources.
func newTestHandler(t *testing.T) *Handler {
	t.Helper()
	st := storetest.Bolt(t)
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	return &Handler{Store: st, Objects: generic.New(generic.Config{Store: st, Registry: reg}), Registry: reg}
}

// setNode stores node-1, made if missing, with these addresses and node API port.
func setNode(t *testing.T, h *Handler, addrs []corev1.NodeAddress, port int32) {
	t.Helper()
	nodes, _ := h.Registry.Lookup(nodesGVR)
	if _, err := h.Objects.Get(t.Context(), nodes, "", "node-1"); apierrors.IsNotFound(err) {
		if _, err := h.Objects.Create(t.Context(), nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, generic.CreateOptions{}); err != nil {
			t.Fatalf("create node: %v", err)
		}
	}
	_, err := h.Objects.Update(t.Context(), nodes, "", "node-1", generic.UpdateOptions{Subresource: "status"}, func(cur runtime.Object) (runtime.Object, error) {
		n := cur.(*corev1.Node)
		n.Status.Addresses, n.Status.DaemonEndpoints.KubeletEndpoint.Port = addrs, port
		return n, nil
	})
	if err != nil {
		t.Fatalf("node status: %v", err)
	}
}
