package proxy

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Trim keeps what the service ports are made of, drops the rest, and may run twice.
func TestTrimKeepsWhatTheProxyReads(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "7", UID: "u", Labels: map[string]string{"app": "web"},
			Annotations:   map[string]string{corev1.AnnotationLoadBalancerSourceRangesKey: "10.0.0.0/8", "other": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.9", ClusterIPs: []string{"10.96.0.9"},
			Selector: map[string]string{"app": "web"}, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			SessionAffinity: corev1.ServiceAffinityClientIP,
			Ports:           []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080, AppProtocol: ptr.To("http")}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.200.0.200"}}}},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-x", Namespace: "ns", ResourceVersion: "8",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "c"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5", "10.244.0.6"}, NodeName: ptr.To("node-1"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, TargetRef: &corev1.ObjectReference{Name: "pod"}}},
	}
	want := servicePort(svc.DeepCopy(), &svc.Spec.Ports[0], []*discoveryv1.EndpointSlice{slice.DeepCopy()}, "node-1")
	for range 2 { // idempotent
		s, _ := Trim(svc)
		e, _ := Trim(slice)
		svc, slice = s.(*corev1.Service), e.(*discoveryv1.EndpointSlice)
	}
	if got := servicePort(svc, &svc.Spec.Ports[0], []*discoveryv1.EndpointSlice{slice}, "node-1"); !reflect.DeepEqual(got, want) {
		t.Errorf("trimmed objects give\n%+v\nwant\n%+v", got, want)
	}
	if svc.UID != "" || svc.ManagedFields != nil || svc.Spec.Selector != nil || len(svc.Annotations) != 1 || svc.ResourceVersion != "7" ||
		slice.Endpoints[0].TargetRef != nil || len(slice.Labels) != 1 {
		t.Errorf("trimmed objects keep more than the proxy reads: %+v %+v", svc, slice)
	}
}
