package healthcheck

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/minik8s/minik8s/pkg/proxy"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// kube-proxy's answer for ns/web with 2 local endpoints on a healthy proxy, as its
// hcHandler writes it (a dedented literal, no trailing newline).
const wantBody = "{\n\t\"service\": {\n\t\t\"namespace\": \"ns\",\n\t\t\"name\": \"web\"\n\t},\n\t\"localEndpoints\": 2,\n\t\"serviceProxyHealthy\": true\n}"

type fixture struct {
	svcs, slices cache.Indexer
	addrs        map[uint16]string // health check port -> the loopback address it really listens on
}

func newFixture() *fixture {
	return &fixture{svcs: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		slices: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}), addrs: map[uint16]string{}}
}

func (f *fixture) src() proxy.Source {
	return proxy.Listers(corelisters.NewServiceLister(f.svcs), discoverylisters.NewEndpointSliceLister(f.slices))
}

// server listens on a free loopback port for each health check port.
func (f *fixture) server(t *testing.T, healthy func() bool) *Server {
	s := New("node-1", healthy, slog.New(slog.DiscardHandler))
	s.listen = func(addr string) (net.Listener, error) {
		if !strings.HasPrefix(addr, "0.0.0.0:") {
			t.Errorf("listening on %s: want every address, as kube-proxy", addr)
		}
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err == nil {
			p, _ := strconv.Atoi(strings.TrimPrefix(addr, "0.0.0.0:"))
			f.addrs[uint16(p)] = l.Addr().String()
		}
		return l, err
	}
	t.Cleanup(s.Close)
	return s
}

func lb(name string, etp corev1.ServiceExternalTrafficPolicy, hc int32) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.5", ExternalTrafficPolicy: etp, HealthCheckNodePort: hc,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080}, {Name: "https", Port: 443, NodePort: 30443}}}}
}

type ep struct {
	ip, node           string
	ready, terminating bool
}

func slice(svc, name string, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}, {Name: ptr.To("https"), Port: ptr.To[int32](8443)}}}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.ip}, NodeName: ptr.To(e.node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e.ready), Serving: ptr.To(true), Terminating: ptr.To(e.terminating)}})
	}
	return s
}

func get(t *testing.T, addr string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/anything")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// A LoadBalancer with externalTrafficPolicy Local gets its port, answered as kube-proxy
// does: 200 and the count of this node's ready endpoint addresses (each address once,
// whatever its ports and slices; another node's, not-ready and terminating ones left
// out), 503 when there are none or the proxy is unhealthy; the port closes when the
// Service no longer needs it.
func TestHealthCheckNodePorts(t *testing.T) {
	f := newFixture()
	var unhealthy atomic.Bool
	s := f.server(t, func() bool { return !unhealthy.Load() })
	for _, o := range []any{lb("web", corev1.ServiceExternalTrafficPolicyLocal, 31000), lb("cluster", corev1.ServiceExternalTrafficPolicyCluster, 0)} {
		_ = f.svcs.Add(o)
	}
	_ = f.slices.Add(slice("web", "web-a", ep{"10.244.1.5", "node-1", true, false}, ep{"10.244.1.6", "node-1", true, false},
		ep{"10.244.2.5", "node-2", true, false}, ep{"10.244.1.7", "node-1", false, false}, ep{"10.244.1.8", "node-1", false, true}))
	_ = f.slices.Add(slice("web", "web-b", ep{"10.244.1.5", "node-1", true, false}))
	// An IPv6 slice is another family's proxier's, as with kube-proxy's IPv4 one: not counted.
	v6 := slice("web", "web-v6", ep{"fd00::5", "node-1", true, false})
	v6.AddressType = discoveryv1.AddressTypeIPv6
	_ = f.slices.Add(v6)
	if err := s.Sync(f.src()); err != nil {
		t.Fatal(err)
	}
	if len(f.addrs) != 1 || f.addrs[31000] == "" {
		t.Fatalf("opened %v: want only web's port 31000", f.addrs)
	}
	addr := f.addrs[31000]
	code, h, body := get(t, addr)
	if code != 200 || body != wantBody || h.Get("Content-Type") != "application/json" || h.Get("X-Content-Type-Options") != "nosniff" ||
		h.Get("X-Load-Balancing-Endpoint-Weight") != "2" {
		t.Errorf("got %d %v\n%s\nwant 200 and\n%s", code, h, body, wantBody)
	}

	unhealthy.Store(true)
	if code, _, body := get(t, addr); code != 503 || !strings.Contains(body, `"localEndpoints": 2,`) || !strings.Contains(body, `"serviceProxyHealthy": false`) {
		t.Errorf("with the proxy unhealthy: %d\n%s", code, body)
	}
	unhealthy.Store(false)

	// Only terminating endpoints left here: the check fails, as kube-proxy's.
	_ = f.slices.Delete(slice("web", "web-b"))
	_ = f.slices.Update(slice("web", "web-a", ep{"10.244.1.8", "node-1", false, true}, ep{"10.244.2.5", "node-2", true, false}))
	if err := s.Sync(f.src()); err != nil {
		t.Fatal(err)
	}
	if code, h, body := get(t, addr); code != 503 || !strings.Contains(body, `"localEndpoints": 0,`) || h.Get("X-Load-Balancing-Endpoint-Weight") != "0" {
		t.Errorf("without a local ready endpoint: %d %v\n%s", code, h, body)
	}

	// Cluster policy: no port any more.
	_ = f.svcs.Update(lb("web", corev1.ServiceExternalTrafficPolicyCluster, 0))
	if err := s.Sync(f.src()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/"); err == nil {
		t.Errorf("port %s still answers after the Service stopped needing it", addr)
	}
}

// A port that cannot be opened is reported as kube-proxy's FailedToStartServiceHealthcheck
// Event says it, once until the port opens (kube-proxy's recorder folds repeats into one
// Event's series), and tried again at each sync.
func TestHealthCheckPortFailureReported(t *testing.T) {
	f := newFixture()
	s := f.server(t, func() bool { return true })
	listen := s.listen
	var taken atomic.Bool
	taken.Store(true)
	s.listen = func(addr string) (net.Listener, error) {
		if taken.Load() {
			return nil, errors.New("listen tcp4 " + addr + ": bind: address already in use")
		}
		return listen(addr)
	}
	var reported []string
	s.Event = func(nsn types.NamespacedName, note string) { reported = append(reported, nsn.String()+": "+note) }
	_ = f.svcs.Add(lb("web", corev1.ServiceExternalTrafficPolicyLocal, 31000))
	for range 2 {
		if err := s.Sync(f.src()); err != nil {
			t.Fatal(err)
		}
	}
	want := `ns/web: node node-1 failed to start healthcheck "ns/web" on port 31000: listen tcp4 0.0.0.0:31000: bind: address already in use`
	if len(reported) != 1 || reported[0] != want {
		t.Errorf("reported %q, want once %q", reported, want)
	}
	taken.Store(false)
	if err := s.Sync(f.src()); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get(t, f.addrs[31000]); code != 503 {
		t.Errorf("the port, free again, answers %d; want 503 (no endpoints)", code)
	}
}
