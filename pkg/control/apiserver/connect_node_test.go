package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
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
		apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/nodes/node-1", nil).Body.Bytes(), n)
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

// sendForStatus sends method url with header to a running server and reads the answer:
// its code, its body and the Status in it.
func sendForStatus(t *testing.T, method, url string, header http.Header) (int, []byte, metav1.Status) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	maps.Copy(req.Header, header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data, apitest.ResponseStatus(t, data)
}

// TestNodesProxyRefusesNonGlobalAddress: nodes/proxy refuses a node whose address is not a
// global unicast one (loopback here) with kube's 400 "address not allowed", upgrades too,
// before dialing it (kube's node ResourceLocation, isProxyableHostname); a pod's log on the
// same node is still read, as kube checks nodes/proxy alone.
func TestNodesProxyRefusesNonGlobalAddress(t *testing.T) {
	var mu sync.Mutex
	var dialed []string
	srv := serverWithNode(t, fakeNodeRuntime{}, func(r *http.Request) { mu.Lock(); dialed = append(dialed, r.URL.Path); mu.Unlock() })
	spdy := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}, "X-Stream-Protocol-Version": {"v4.channel.k8s.io"}}
	for _, header := range []http.Header{nil, spdy} {
		code, data, st := sendForStatus(t, http.MethodGet, srv.URL+"/api/v1/nodes/node-1/proxy/healthz", header)
		if code != 400 || st.Reason != metav1.StatusReasonBadRequest || st.Message != "address not allowed" {
			t.Errorf("nodes/proxy to a node on 127.0.0.1 (upgrade %q): %d %s; want 400 \"address not allowed\"", header.Get("Upgrade"), code, data)
		}
	}
	mu.Lock()
	if len(dialed) != 0 {
		t.Errorf("the node was dialed for %v", dialed)
	}
	mu.Unlock()
	resp, err := http.Get(srv.URL + "/api/v1/namespaces/default/pods/a/log?previous=true")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(dialed, []string{"/containerLogs/default/a/c"}) {
		t.Errorf("log of a pod on a node at 127.0.0.1: the node was dialed for %v; want its log", dialed)
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
	s, _ := newCachedServer(t)
	h := s.Handler()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	if w := do(t, h, "POST", "/api/v1/nodes", n); w.Code != http.StatusCreated {
		t.Fatalf("create node: %d %s", w.Code, w.Body)
	}
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/nodes/node-1", nil).Body.Bytes(), n)
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.200.0.11"}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
	if w := do(t, h, "PUT", "/api/v1/nodes/node-1/status", n); w.Code != http.StatusOK {
		t.Fatalf("node status: %d %s", w.Code, w.Body)
	}
	for id, want := range map[string]string{
		"node-1":            "node API https://10.200.0.11:10250",
		"node-1:10250":      "node API https://10.200.0.11:10250",
		"http:node-1:10250": "node API https://10.200.0.11:10250",
		"node-1:8080":       "proxy http://10.200.0.11:8080",
		"http:node-1:8080":  "proxy http://10.200.0.11:8080",
		"https:node-1:4194": "proxy https://10.200.0.11:4194",
	} {
		loc, nodeAPI, err := s.nodeProxyLocation(context.Background(), id)
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
		w := do(t, h, "GET", "/api/v1/nodes/"+id+"/proxy/healthz", nil)
		st := apitest.ResponseStatus(t, w.Body.Bytes())
		if got := fmt.Sprintf("%d %s", w.Code, st.Message); got != want {
			t.Errorf("nodes/%s/proxy: %s; want %s", id, got, want)
		}
	}
}
