package l2

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func TestElectIsMetalLBsOrder(t *testing.T) {
	// sha256("node-2#10.200.0.200") = 171c3b0f... < sha256("node-1#10.200.0.200") =
	// d2c9fef6..., and the other way round for .201 (6c8af9ea... < e392d7b4...).
	for ip, want := range map[string]string{"10.200.0.200": "node-2", "10.200.0.201": "node-1"} {
		if got := Elect(ip, []string{"node-2", "node-1"}); got != want {
			t.Errorf("Elect(%s) = %s, want %s", ip, got, want)
		}
		if got := Elect(ip, []string{"node-1", "node-2"}); got != want {
			t.Errorf("Elect(%s) depends on the candidates' order", ip)
		}
	}
	if Elect("10.200.0.200", nil) != "" {
		t.Error("no candidate elected someone")
	}
}

func lbService(name, ip string, local bool) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.1"}}
	if ip != "" {
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	}
	if local {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	return svc
}

func endpoints(svc string, nodes ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: svc + "-x",
		Labels: map[string]string{discoveryv1.LabelServiceName: svc}}, AddressType: discoveryv1.AddressTypeIPv4}
	for i, n := range nodes {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.244.0.%d", i+2)},
			NodeName: ptr.To(n), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

func TestOwned(t *testing.T) {
	svcs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	slices := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range []any{
		lbService("a", "10.200.0.200", false), endpoints("a", "node-1"), // cluster policy: node-2 wins .200
		lbService("b", "10.200.0.201", true), endpoints("b", "node-1"), // local: only node-1 has endpoints
		lbService("c", "10.200.0.202", false), endpoints("c"), // no endpoints: nobody answers
		lbService("d", "", false), endpoints("d", "node-1"), // no address yet
	} {
		var err error
		switch o := o.(type) {
		case *corev1.Service:
			err = svcs.Add(o)
		case *discoveryv1.EndpointSlice:
			err = slices.Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	owned := func(node string, live ...string) string {
		s := &Speaker{Node: node, Services: corelisters.NewServiceLister(svcs), Slices: discoverylisters.NewEndpointSliceLister(slices)}
		m := map[string]bool{}
		for _, n := range live {
			m[n] = true
		}
		ips, err := s.Owned(m)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(ips)
	}
	for _, c := range []struct {
		node string
		live []string
		want string
	}{
		{"node-1", []string{"node-1", "node-2"}, "[10.200.0.201]"},
		{"node-2", []string{"node-1", "node-2"}, "[10.200.0.200]"},
		// node-2's proxy stopped answering: node-1 takes its address too.
		{"node-1", []string{"node-1"}, "[10.200.0.200 10.200.0.201]"},
		// node-1's stopped: node-2 keeps its own, and the local-policy address stays
		// unanswered (node-2 has no endpoint of it: it would drop the traffic).
		{"node-2", []string{"node-2"}, "[10.200.0.200]"},
	} {
		if got := owned(c.node, c.live...); got != c.want {
			t.Errorf("%s with %v live owns %s, want %s", c.node, c.live, got, c.want)
		}
	}
}
