package proxy

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// apiObjects are n Services and their EndpointSlices (2 endpoints) as an API server
// returns them: with uid, timestamps, managed fields, selector, target references.
func apiObjects(n int) (svcs [][]byte, slices [][]byte) {
	now := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	fields := func(manager string) []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:ports":{".":{},"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},"f:selector":{},"f:type":{}}}`)}}}
	}
	for i := range n {
		name := fmt.Sprintf("svc-%05d", i)
		ip := fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench", UID: "0d3f3c55-8a7e-4f3b-9c1e-5a0c7e2b9d41",
			ResourceVersion: fmt.Sprint(1000 + i), CreationTimestamp: now, Labels: map[string]string{"app": name},
			ManagedFields: fields("kubectl-client-side-apply")},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
				Selector: map[string]string{"app": name}, SessionAffinity: corev1.ServiceAffinityNone,
				IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
				InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
				Ports:                 []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		sl := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-7xk2p", GenerateName: name + "-", Namespace: "bench",
			UID: "4c1b2a77-0f6e-4b8a-8d2e-9e3f1a6b5c20", ResourceVersion: fmt.Sprint(2000 + i), Generation: 1, CreationTimestamp: now,
			Labels:      map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"},
			Annotations: map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "2026-11-25T12:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: "0d3f3c55-8a7e-4f3b-9c1e-5a0c7e2b9d41",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			ManagedFields: fields("endpointslice-controller")},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}}}
		for e := range 2 {
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.244.%d.%d", e+1, i%250+2)},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
				NodeName:   ptr.To(fmt.Sprintf("node-%d", e+1)),
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "bench", Name: fmt.Sprintf("%s-pod-%d", name, e), UID: "9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d"}})
		}
		a, _ := json.Marshal(svc)
		b, _ := json.Marshal(sl)
		svcs, slices = append(svcs, a), append(slices, b)
	}
	return svcs, slices
}

// BenchmarkInformerCache prints the heap that 10 000 Services and their EndpointSlices take
// in an informer cache: decoded as they come (the baseline), after Trim, as records
// (Compact, miniproxy's).
//
//	go test -run XXX -bench InformerCache -benchtime 1x ./pkg/proxy
func BenchmarkInformerCache(b *testing.B) {
	const n = 10000
	svcs, slices := apiObjects(n)
	for _, c := range []struct {
		name      string
		transform func(any) (any, error)
	}{
		{"decoded", func(o any) (any, error) { return o, nil }},
		{"Trim", Trim},
		{"Compact", Compact},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				held := make([]any, 0, 2*n)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for i := range n {
					svc, sl := &corev1.Service{}, &discoveryv1.EndpointSlice{}
					_ = json.Unmarshal(svcs[i], svc)
					_ = json.Unmarshal(slices[i], sl)
					s, _ := c.transform(svc)
					e, _ := c.transform(sl)
					held = append(held, s, e)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-live/10k-services")
				// What the heap's spans hold: the live objects and the free slots between
				// them, which the process cannot give back (RSS follows this).
				b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/(1<<20), "MiB-spans/10k-services")
				runtime.KeepAlive(held)
			}
		})
	}
}
