package proxy

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// testService is Service ns/name with cluster IP ip and one port, http 80/TCP.
func testService(name, ip string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
}

// testSlice is the EndpointSlice of Service ns/svcName with one endpoint, ip on node-1, port http 8080/TCP.
func testSlice(svcName, ip string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: svcName + "-x", Namespace: "ns",
		Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, NodeName: ptr.To("node-1")}}}
}

func TestSnapshotterSnapshotsAgain(t *testing.T) {
	svcIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	sliceIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = svcIdx.Add(testService("a", "10.96.0.1"))
	_ = svcIdx.Add(testService("b", "10.96.0.2"))
	_ = sliceIdx.Add(testSlice("a", "10.244.0.1"))
	_ = sliceIdx.Add(testSlice("b", "10.244.0.2"))
	sn := &Snapshotter{Services: corelisters.NewServiceLister(svcIdx), Slices: discoverylisters.NewEndpointSliceLister(sliceIdx), NodeName: "node-1"}
	first, err := sn.Snapshot()
	if err != nil || len(first) != 2 {
		t.Fatalf("first snapshot %v %v", first, err)
	}
	_ = sliceIdx.Update(testSlice("b", "10.244.0.9")) // b's endpoint replaced
	second, err := sn.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if got := second[1].Endpoints[0]; got.IP != "10.244.0.9" || !got.Local || !got.Ready {
		t.Errorf("changed service b: endpoint %+v, want 10.244.0.9, local and ready", got)
	}
	// Whatever it remembers, it says what a fresh snapshot says.
	fresh, err := Snapshot(sn.Services, sn.Slices, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range fresh {
		if fresh[i].Name != second[i].Name || fresh[i].Endpoints[0] != second[i].Endpoints[0] {
			t.Errorf("port %d: remembered %+v, fresh %+v", i, second[i], fresh[i])
		}
	}
	_ = svcIdx.Delete(testService("a", ""))
	if third, _ := sn.Snapshot(); len(third) != 1 || third[0].Name != "ns/b:http" {
		t.Errorf("after deleting a: %+v", third)
	}
}

func TestSnapshotterChangesReadsOnlyMarkedServices(t *testing.T) {
	svcIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	sliceIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, n := range []string{"a", "b", "c"} {
		_ = svcIdx.Add(testService(n, "10.96.0.1"))
		_ = sliceIdx.Add(testSlice(n, "10.244.0.1"))
	}
	{
		sn := &Snapshotter{Services: corelisters.NewServiceLister(svcIdx), Slices: discoverylisters.NewEndpointSliceLister(sliceIdx)}
		if _, err := sn.Changes(); err == nil {
			t.Errorf("changes before any snapshot: no error")
		}
		if _, err := sn.Snapshot(); err != nil {
			t.Fatal(err)
		}
		b := testSlice("b", "10.244.0.9")
		_ = sliceIdx.Update(b)
		sn.Mark(b)
		sn.Mark(testService("a", "")) // marked but the same object: no change
		_ = svcIdx.Delete(testService("c", ""))
		sn.Mark(cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: testService("c", "")})
		changes, err := sn.Changes()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]Change{}
		for _, c := range changes {
			for _, p := range append(c.Before, c.After...) {
				got[p.Name] = c
			}
		}
		if len(changes) != 2 || got["ns/b:http"].After[0].Endpoints[0].IP != "10.244.0.9" || got["ns/b:http"].Before[0].Endpoints[0].IP != "10.244.0.1" ||
			len(got["ns/c:http"].After) != 0 || len(got["ns/c:http"].Before) != 1 {
			t.Errorf("changes %+v: want b's endpoint replaced and c gone", changes)
		}
		if again, _ := sn.Changes(); len(again) != 0 {
			t.Errorf("changes again without marks: %+v", again)
		}
		// A second slice for b, and c back with its slice still there: both read.
		b2 := testSlice("b", "10.244.0.7")
		b2.Name = "b-y"
		_ = sliceIdx.Add(b2)
		sn.Mark(b2)
		_ = svcIdx.Add(testService("c", "10.96.0.1"))
		sn.Mark(testService("c", ""))
		changes, err = sn.Changes()
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) != 2 {
			t.Fatalf("changes %+v: want b and c", changes)
		}
		for _, c := range changes {
			if n := len(c.After[0].Endpoints); c.After[0].Name == "ns/b:http" && n != 2 || c.After[0].Name == "ns/c:http" && n != 1 {
				t.Errorf("%s has %d endpoints: %+v", c.After[0].Name, n, c.After[0].Endpoints)
			}
		}
	}
}

// BenchmarkSnapshotterMemory is what a Snapshotter keeps after a snapshot of 10 000
// Services x 2 endpoints read from records (miniproxy's informers), the snapshot itself
// dropped: live bytes and objects, as the daemon holds them between syncs.
func BenchmarkSnapshotterMemory(b *testing.B) {
	svcIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	sliceIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for i := range 10000 {
		name := fmt.Sprintf("svc-%05d", i)
		_ = svcIdx.Add(ServiceRecordOf(testService(name, fmt.Sprintf("10.96.%d.%d", i/250, i%250+1))))
		s := testSlice(name, fmt.Sprintf("10.244.%d.%d", i/250, i%250+1))
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.245.%d.%d", i/250, i%250+1)}, NodeName: ptr.To("node-2")})
		_ = sliceIdx.Add(SliceRecordOf(s))
	}
	var before, after runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		sn := &Snapshotter{Source: Records(svcIdx, sliceIdx), NodeName: "node-1"}
		if ports, err := sn.Snapshot(); err != nil || len(ports) != 10000 {
			b.Fatal(len(ports), err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "live-MiB")
		b.ReportMetric(float64(after.HeapObjects-before.HeapObjects), "live-objects")
		runtime.KeepAlive(sn)
	}
}
