package iptables

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/minik8s/minik8s/pkg/proxy"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// BenchmarkBuildRules lays out 10 000 services x 2 endpoints: the Go side of a full sync.
func BenchmarkBuildRules(b *testing.B) {
	ports := benchPorts(10000)
	b.ReportAllocs()
	for b.Loop() {
		rs := buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, ports)
		for _, t := range []*table{rs.filter, rs.nat} {
			for _, c := range t.order {
				t.sum(c)
			}
		}
	}
}

// BenchmarkPartialLayout is the Go side of a partial sync at 10 000 services: reading the
// one Service an event named, and laying out what to write.
func BenchmarkPartialLayout(b *testing.B) {
	svcIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	sliceIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for i := range 10000 {
		name := fmt.Sprintf("svc-%05d", i)
		_ = svcIdx.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench"},
			Spec: corev1.ServiceSpec{ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}})
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-x", Namespace: "bench", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}}}
		for _, ip := range []string{fmt.Sprintf("10.244.%d.%d", i/250, i%250+1), fmt.Sprintf("10.245.%d.%d", i/250, i%250+1)} {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
		}
		_ = sliceIdx.Add(s)
	}
	services, slices := corelisters.NewServiceLister(svcIdx), discoverylisters.NewEndpointSliceLister(sliceIdx)
	bld := &builder{cfg: Config{ClusterCIDR: "10.244.0.0/16"}}
	snap := &proxy.Snapshotter{Services: services, Slices: slices, NodeName: "node-1"}
	ports, _ := snap.Snapshot()
	bld.build(ports)
	b.ReportAllocs()
	gen := 0
	for b.Loop() {
		// One Service's second endpoint moves, and the informer says so.
		gen++
		s, _, _ := sliceIdx.GetByKey("bench/svc-05000-x")
		moved := s.(*discoveryv1.EndpointSlice).DeepCopy()
		moved.Endpoints[1].Addresses = []string{fmt.Sprintf("10.246.%d.%d", gen/250%256, gen%250+1)}
		_ = sliceIdx.Update(moved)
		snap.Mark(moved)
		changes, err := snap.Changes()
		if err != nil || len(changes) != 1 {
			b.Fatal(changes, err)
		}
		if rs, _ := bld.update(changes); len(rs.nat.order) != 2 {
			b.Fatalf("wrote %v, want the service's chain and the new endpoint's", rs.nat.order)
		}
	}
}

// BenchmarkBuilderMemory is what the builder keeps of 10 000 services x 2 endpoints after a
// full layout (its rule text garbage): live bytes and objects, as the daemon holds them
// between syncs.
func BenchmarkBuilderMemory(b *testing.B) {
	ports := benchPorts(10000)
	var before, after runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		bld := &builder{cfg: Config{ClusterCIDR: "10.244.0.0/16"}}
		rs := bld.build(ports)
		for _, t := range []*table{rs.filter, rs.nat} {
			for _, c := range t.order {
				t.sum(c)
			}
		}
		rs = ruleSet{}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "live-MiB")
		b.ReportMetric(float64(after.HeapObjects-before.HeapObjects), "live-objects")
		runtime.KeepAlive(bld)
	}
}

func benchPorts(n int) []proxy.ServicePort {
	ports := make([]proxy.ServicePort, n)
	for i := range ports {
		ports[i] = proxy.ServicePort{Name: fmt.Sprintf("bench/svc-%05d:http", i), Protocol: corev1.ProtocolTCP,
			ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), Port: 80,
			Endpoints: []proxy.Endpoint{{IP: fmt.Sprintf("10.244.%d.%d", i/250, i%250+1), Port: 8080, Ready: true},
				{IP: fmt.Sprintf("10.245.%d.%d", i/250, i%250+1), Port: 8080, Ready: true}}}
	}
	return ports
}
