package proxy

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unique"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// servicePort is port p of svc with slices' endpoints, read from API objects as the
// proxy reads their records.
func servicePort(svc *corev1.Service, p *corev1.ServicePort, slices []*discoveryv1.EndpointSlice, nodeName string) ServicePort {
	return portOf(ServiceRecordOf(svc), &ServiceRecordPort{Name: p.Name, Protocol: orTCP(p.Protocol), Port: p.Port, NodePort: p.NodePort},
		sliceRecords(slices), nodeName, NodeFacts{})
}

// Records on indexers holding Compact's records read as Listers on the API objects do:
// the same snapshot, the same changes when a record replaces another.
func TestRecordsReadAsListers(t *testing.T) {
	lb := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "7",
		Annotations: map[string]string{corev1.AnnotationLoadBalancerSourceRangesKey: "10.0.0.0/8,bad"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.9", ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			SessionAffinity: corev1.ServiceAffinityClientIP, ExternalIPs: []string{"192.0.2.1"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080}, {Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: "x"}, {IP: "10.200.0.200"}}}}}
	lbSlice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-x", Namespace: "ns", ResourceVersion: "8",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}, {Name: ptr.To("dns"), Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To[int32](5353)},
			{Name: ptr.To("any")}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5", "10.244.0.6"}, NodeName: ptr.To("node-1")},
			{Addresses: []string{"10.244.1.5"}, NodeName: ptr.To("node-2"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}},
			{NodeName: ptr.To("node-2")}}}
	v6 := testSlice("web", "fd00::1")
	v6.Name, v6.AddressType = "web-v6", discoveryv1.AddressTypeIPv6
	headless := testService("headless", corev1.ClusterIPNone)
	objs := []any{lb, lbSlice, v6, headless, testService("a", "10.96.0.1"), testSlice("a", "10.244.0.1"), testSlice("gone", "10.244.0.2")}

	apiSvcs, apiSlices := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}), cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	// As an informer's indexer: keyed and indexed through the records' GetObjectMeta.
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	recSvcs, recSlices := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers), cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
	for _, o := range objs {
		r, _ := Compact(o)
		if again, _ := Compact(r); again != r {
			t.Fatalf("Compact of a record %+v is not the record", r)
		}
		api, rec := apiSvcs, recSvcs
		if _, ok := o.(*discoveryv1.EndpointSlice); ok {
			api, rec = apiSlices, recSlices
		}
		if err := api.Add(o); err != nil {
			t.Fatal(err)
		}
		if err := rec.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	apiSn := &Snapshotter{Services: corelisters.NewServiceLister(apiSvcs), Slices: discoverylisters.NewEndpointSliceLister(apiSlices), NodeName: "node-1"}
	recSn := &Snapshotter{Source: Records(recSvcs, recSlices), NodeName: "node-1"}
	want, err := apiSn.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	got, err := recSn.Snapshot()
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("records give\n%+v, %v\nAPI objects give\n%+v", got, err, want)
	}
	if len(want) != 3 || want[2].Name != "ns/web:http" || len(want[2].Endpoints) != 2 || want[2].AffinitySeconds != corev1.DefaultClientIPServiceAffinitySeconds ||
		!want[2].ExternalLocal || fmt.Sprint(want[2].SourceRanges, want[2].LoadBalancerIPs) != "[10.0.0.0/8] [10.200.0.200]" {
		t.Errorf("service ports %+v: want a's, web's dns and http, http with two endpoints (an endpoint's first address; one without an address left out), affinity, a local policy, one source range and one address", want)
	}

	moved := lbSlice.DeepCopy()
	moved.Endpoints = moved.Endpoints[:1]
	_ = apiSlices.Update(moved)
	apiSn.Mark(moved)
	r, _ := Compact(moved)
	_ = recSlices.Update(r)
	recSn.Mark(r)
	_ = apiSvcs.Delete(testService("a", ""))
	apiSn.Mark(testService("a", ""))
	gone, _ := Compact(testService("a", ""))
	_ = recSvcs.Delete(gone)
	recSn.Mark(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: gone})
	wantChanges, err := apiSn.Changes()
	if err != nil {
		t.Fatal(err)
	}
	gotChanges, err := recSn.Changes()
	byName := func(cs []Change) map[string]Change {
		m := map[string]Change{}
		for _, c := range cs {
			for _, p := range append(c.Before, c.After...) {
				m[p.Name] = c
			}
		}
		return m
	}
	if err != nil || len(gotChanges) != 2 || !reflect.DeepEqual(byName(gotChanges), byName(wantChanges)) {
		t.Errorf("records' changes\n%+v, %v\nAPI objects'\n%+v", gotChanges, err, wantChanges)
	}
}

// A record keeps none of the decoder's strings: those many records repeat are shared
// (namespace, node name), its own are copies (docs/performance.md, "Where miniproxy's
// memory goes").
func TestRecordsOwnTheirStrings(t *testing.T) {
	decoded := func(ip string) *discoveryv1.EndpointSlice {
		s := testSlice("web", ip)
		// As a decoder makes them: each string an allocation of its own.
		s.Namespace, s.Name, s.Endpoints[0].NodeName = strings.Clone("ns"), strings.Clone(s.Name), ptr.To(strings.Clone("node-1"))
		return s
	}
	// Interned strings are shared while a handle to them lives (unique drops them after a
	// collection otherwise): one for each, so a collection between the records cannot.
	ns, node := unique.Make("ns"), unique.Make("node-1")
	defer runtime.KeepAlive(ns)
	defer runtime.KeepAlive(node)
	a, b := decoded("10.244.0.1"), decoded("10.244.0.2")
	ra, rb := SliceRecordOf(a), SliceRecordOf(b)
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	if ra.Namespace != "ns" || !same(ra.Namespace, rb.Namespace) || !same(ra.Endpoints[0].NodeName, rb.Endpoints[0].NodeName) {
		t.Errorf("records of two slices of namespace ns on node-1 hold namespaces %q, %q and node names %q, %q: want one string each",
			ra.Namespace, rb.Namespace, ra.Endpoints[0].NodeName, rb.Endpoints[0].NodeName)
	}
	if ra.Name != a.Name || same(ra.Name, a.Name) || ra.Endpoints[0].IP != "10.244.0.1" || same(ra.Endpoints[0].IP, a.Endpoints[0].Addresses[0]) {
		t.Errorf("record %+v: want its name and IP equal to the slice's, not the slice's strings", ra)
	}
	svc := testService("web", strings.Clone("10.96.0.1"))
	if r := ServiceRecordOf(svc); r.ClusterIP != svc.Spec.ClusterIP || same(r.ClusterIP, svc.Spec.ClusterIP) || r.Ports[0].Name != "http" {
		t.Errorf("record %+v: want the Service's cluster IP and port name, not its strings", r)
	}
}

// The proxy is IPv4: as kube-proxy's IPv4 proxier (GetClusterIPByFamily, MapIPsByIPFamily,
// MapCIDRsByIPFamily) it reads a Service's IPv4 cluster IP and addresses only, so an IPv6
// external IP does not become a rule iptables-restore refuses. A load balancer address of
// ipMode Proxy is the load balancer's, not the nodes' (IsVIPMode), and a zero source range
// allows everyone (IsZeroCIDR): no firewall.
func TestServiceRecordReadsIPv4VIPAddressesOnly(t *testing.T) {
	svc := testService("dual", "fd00::10")
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	svc.Spec.ClusterIPs = []string{"fd00::10", "10.96.0.10"}
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
	svc.Spec.ExternalIPs = []string{"2001:db8::1", "192.0.2.1"}
	svc.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "0.0.0.0/0"}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{
		{IP: "2001:db8::2", IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)},
		{IP: "10.200.0.1", IPMode: ptr.To(corev1.LoadBalancerIPModeProxy)},
		{IP: "10.200.0.2", IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)},
		{IP: "10.200.0.3"},
	}
	r := ServiceRecordOf(svc)
	if got := fmt.Sprintf("%s %v %v %v", r.ClusterIP, r.ExternalIPs, r.LoadBalancerIPs, r.SourceRanges); got != "10.96.0.10 [192.0.2.1] [10.200.0.2 10.200.0.3] []" {
		t.Errorf("cluster IP, external IPs, load balancer IPs, source ranges: %s, want 10.96.0.10 [192.0.2.1] [10.200.0.2 10.200.0.3] []", got)
	}
	v6 := testService("v6", "fd00::11")
	v6.Spec.ClusterIPs = []string{"fd00::11"}
	v6.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	if r := ServiceRecordOf(v6); proxied(r) {
		t.Errorf("an IPv6-only Service is proxied (cluster IP %q)", r.ClusterIP)
	}
}

// Endpoint conditions as kube-proxy's EndpointSliceCache reads them (addEndpoints): serving
// unset is true, whatever ready says; an address in two slices (a pod moving between
// slices, or a new pod given a terminating one's address) is the one that is not
// terminating.
func TestEndpointConditionsAsKubeProxyReadsThem(t *testing.T) {
	svc := testService("web", "10.96.0.1")
	a, b := testSlice("web", "10.244.0.5"), testSlice("web", "10.244.0.7")
	a.Name, b.Name = "web-a", "web-b"
	a.Endpoints[0].Conditions = discoveryv1.EndpointConditions{Ready: ptr.To(false), Terminating: ptr.To(true)}
	a.Endpoints = append(a.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.244.0.7"},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}})
	sp := servicePort(svc, &svc.Spec.Ports[0], []*discoveryv1.EndpointSlice{a, b}, "node-1")
	want := []Endpoint{{IP: "10.244.0.5", Port: 8080, Serving: true, Terminating: true, Local: true},
		{IP: "10.244.0.7", Port: 8080, Ready: true, Serving: true, Local: true}}
	if !reflect.DeepEqual(sp.Endpoints, want) {
		t.Errorf("endpoints\n%#v\nwant\n%#v", sp.Endpoints, want)
	}
}

// The API server takes any number as a slice's port, as kube-apiserver does; one no
// packet can be sent to (0, negative, above 65535) gives no endpoint, where it would
// have failed the restore of the whole table.
func TestSlicePortOutOfRangeGivesNoEndpoint(t *testing.T) {
	svc := testService("web", "10.96.0.1")
	for _, port := range []int32{0, -1, 70000} {
		s := testSlice("web", "10.244.0.5")
		s.Ports[0].Port = ptr.To(port)
		if sp := servicePort(svc, &svc.Spec.Ports[0], []*discoveryv1.EndpointSlice{s}, "node-1"); len(sp.Endpoints) > 0 {
			t.Errorf("port %d: endpoints %#v, want none", port, sp.Endpoints)
		}
	}
}

// externalTrafficPolicy Local applies to a port that external traffic reaches (a node
// port, an external or load balancer IP), as kube-proxy's UsesLocalEndpoints: a
// LoadBalancer without node ports waiting for its address has none, and no KUBE-SVL.
func TestExternalPolicyNeedsAnExternalAddress(t *testing.T) {
	svc := testService("web", "10.96.0.1")
	svc.Spec.Type, svc.Spec.ExternalTrafficPolicy = corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal
	slices := []*discoveryv1.EndpointSlice{testSlice("web", "10.244.0.5")}
	if sp := servicePort(svc, &svc.Spec.Ports[0], slices, "node-1"); sp.ExternalLocal {
		t.Errorf("a port without node port or address has the Local external policy")
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.200.0.1"}}
	if sp := servicePort(svc, &svc.Spec.Ports[0], slices, "node-1"); !sp.ExternalLocal {
		t.Errorf("a port with a load balancer IP lacks the Local external policy")
	}
}

// AllowFromNode is set when a source range holds the node's address, as kube-proxy's
// cidr.Contains(nodeIP), and only for a LoadBalancer with ranges.
func TestAllowFromNodeWhenARangeHoldsTheNode(t *testing.T) {
	svc := testService("lb", "10.96.0.10")
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	svc.Spec.LoadBalancerSourceRanges = []string{"192.168.0.0/16", "10.1.0.0/24"}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.200.0.2"}}
	r := ServiceRecordOf(svc)
	for _, tc := range []struct {
		nodeIP string
		want   bool
	}{{"10.1.0.7", true}, {"192.168.3.4", true}, {"10.1.1.7", false}, {"", false}} {
		sp := portOf(r, &r.Ports[0], nil, "node-1", NodeFacts{IP: tc.nodeIP})
		if sp.AllowFromNode != tc.want {
			t.Errorf("node %q: AllowFromNode %v, want %v", tc.nodeIP, sp.AllowFromNode, tc.want)
		}
	}
	svc.Spec.LoadBalancerSourceRanges = nil
	r = ServiceRecordOf(svc)
	if sp := portOf(r, &r.Ports[0], nil, "node-1", NodeFacts{IP: "10.1.0.7"}); sp.AllowFromNode {
		t.Error("AllowFromNode without source ranges")
	}
}
