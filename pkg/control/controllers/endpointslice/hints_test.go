package endpointslice

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/endpointslice/topologycache"
	"k8s.io/utils/ptr"
)

func hintNode(name, zone, cpu string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

// hintEndpoint is "ip@node/zone", "!" in front for one not ready.
func hintEndpoint(s string) discoveryv1.Endpoint {
	ready := !strings.HasPrefix(s, "!")
	s = strings.TrimPrefix(s, "!")
	ip, where, _ := strings.Cut(s, "@")
	node, zone, _ := strings.Cut(where, "/")
	ep := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}, NodeName: &node}
	if zone != "" {
		ep.Zone = ptr.To(zone)
	}
	return ep
}

// hintsOf renders a slice's hints: "ip:zones/nodes" for each endpoint.
func hintsOf(s *discoveryv1.EndpointSlice) string {
	var out []string
	for _, e := range s.Endpoints {
		h := e.Addresses[0] + ":"
		if e.Hints != nil {
			var z, n []string
			for _, f := range e.Hints.ForZones {
				z = append(z, f.Name)
			}
			for _, f := range e.Hints.ForNodes {
				n = append(n, f.Name)
			}
			h += strings.Join(z, ",") + "/" + strings.Join(n, ",")
		}
		out = append(out, h)
	}
	return strings.Join(out, " ")
}

// As kube's reconciler tests (k8s.io/endpointslice reconciler_test.go, trafficdist_test.go,
// topologycache_test.go): which hints each endpoint gets, which unchanged slices are
// rewritten for their hints, and the Events.
func TestHints(t *testing.T) {
	twoZones := []*corev1.Node{hintNode("node-1", "zone-a", "2"), hintNode("node-2", "zone-b", "2")}
	eps := []string{"10.0.0.1@node-1/zone-a", "10.0.0.2@node-2/zone-b", "!10.0.0.3@node-1/zone-a"}
	withHints := func(zones ...string) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "stored"}}
		for i, z := range zones {
			ep := hintEndpoint(eps[i])
			if z != "" {
				ep.Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: z}}}
			}
			s.Endpoints = append(s.Endpoints, ep)
		}
		return s
	}
	for _, tc := range []struct {
		name         string
		distribution string
		annotation   string
		nodes        []*corev1.Node
		endpoints    []string                   // of a slice to create
		unchanged    *discoveryv1.EndpointSlice // a stored slice whose content stays
		want         []string                   // hints of the created and updated slices
		events       string
	}{
		{name: "PreferClose: each ready endpoint for its zone", distribution: corev1.ServiceTrafficDistributionPreferClose,
			endpoints: eps, want: []string{"10.0.0.1:zone-a/ 10.0.0.2:zone-b/ 10.0.0.3:"}},
		{name: "PreferSameZone: as PreferClose", distribution: corev1.ServiceTrafficDistributionPreferSameZone,
			endpoints: eps, want: []string{"10.0.0.1:zone-a/ 10.0.0.2:zone-b/ 10.0.0.3:"}},
		{name: "PreferSameNode: for its node too", distribution: corev1.ServiceTrafficDistributionPreferSameNode,
			endpoints: eps, want: []string{"10.0.0.1:zone-a/node-1 10.0.0.2:zone-b/node-2 10.0.0.3:"}},
		{name: "PreferClose: no zone, no zone hint", distribution: corev1.ServiceTrafficDistributionPreferClose,
			endpoints: []string{"10.0.0.1@node-1/"}, want: []string{"10.0.0.1:"}},
		{name: "PreferClose: a stored slice with its hints right stays", distribution: corev1.ServiceTrafficDistributionPreferClose,
			unchanged: withHints("zone-a", "zone-b", "")},
		{name: "PreferClose: a stored slice without hints is rewritten", distribution: corev1.ServiceTrafficDistributionPreferClose,
			unchanged: withHints("", "", ""), want: []string{"10.0.0.1:zone-a/ 10.0.0.2:zone-b/ 10.0.0.3:"}},
		{name: "neither: stored hints go", unchanged: withHints("zone-a", "zone-b", ""), want: []string{"10.0.0.1: 10.0.0.2: 10.0.0.3:"}},
		{name: "neither: a slice without hints stays", unchanged: withHints("", "", "")},
		{name: "Auto: one ready endpoint in each of two zones of equal CPU", annotation: "Auto", nodes: twoZones,
			endpoints: eps, want: []string{"10.0.0.1:zone-a/ 10.0.0.2:zone-b/ 10.0.0.3:"},
			events: "Normal TopologyAwareHintsEnabled Topology Aware Hints has been enabled, addressType: IPv4"},
		{name: "Auto wins over trafficDistribution", annotation: "auto", distribution: corev1.ServiceTrafficDistributionPreferSameNode, nodes: twoZones,
			endpoints: eps, want: []string{"10.0.0.1:zone-a/ 10.0.0.2:zone-b/ 10.0.0.3:"},
			events: "Normal TopologyAwareHintsEnabled Topology Aware Hints has been enabled, addressType: IPv4"},
		{name: "Auto: nodes in one zone", annotation: "Auto", nodes: twoZones[:1],
			endpoints: eps, want: []string{"10.0.0.1: 10.0.0.2: 10.0.0.3:"},
			events: "Warning TopologyAwareHintsDisabled Insufficient Node information: allocatable CPU or zone not specified on one or more nodes, addressType: IPv4"},
		{name: "Auto: fewer endpoints than zones", annotation: "Auto", nodes: twoZones,
			endpoints: eps[:1], want: []string{"10.0.0.1:"},
			events: "Warning TopologyAwareHintsDisabled Insufficient number of endpoints (1 endpoints, 2 zones), addressType: IPv4"},
		{name: "Auto: an endpoint without a zone", annotation: "Auto", nodes: twoZones,
			endpoints: []string{"10.0.0.1@node-1/zone-a", "10.0.0.2@node-2/"}, want: []string{"10.0.0.1: 10.0.0.2:"},
			events: "Warning TopologyAwareHintsDisabled One or more endpoints do not have a zone specified, addressType: IPv4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, n := range tc.nodes {
				if err := nodes.Add(n); err != nil {
					t.Fatal(err)
				}
			}
			c := &Controller{nodes: corelisters.NewNodeLister(nodes), topology: topologycache.NewTopologyCache()}
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: map[string]string{}}}
			if tc.distribution != "" {
				svc.Spec.TrafficDistribution = &tc.distribution
			}
			if tc.annotation != "" {
				svc.Annotations[corev1.AnnotationTopologyMode] = tc.annotation
			}
			si := &topologycache.SliceInfo{ServiceKey: "ns/web", AddressType: discoveryv1.AddressTypeIPv4}
			if tc.endpoints != nil {
				s := &discoveryv1.EndpointSlice{}
				for _, e := range tc.endpoints {
					s.Endpoints = append(s.Endpoints, hintEndpoint(e))
				}
				si.ToCreate = append(si.ToCreate, s)
			}
			var stored string
			if tc.unchanged != nil {
				stored = hintsOf(tc.unchanged)
				si.Unchanged = append(si.Unchanged, tc.unchanged)
			}
			create, update, events := c.hints(svc, si)
			var got []string
			for _, s := range append(create, update...) {
				got = append(got, hintsOf(s))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("hints of the slices written: got %q, want %q", got, tc.want)
			}
			if tc.unchanged != nil && hintsOf(tc.unchanged) != stored {
				t.Errorf("the stored slice (the informer's) was changed: %s", hintsOf(tc.unchanged))
			}
			var ev []string
			for _, e := range events {
				ev = append(ev, e.EventType+" "+e.Reason+" "+e.Message)
			}
			sort.Strings(ev)
			if strings.Join(ev, "\n") != tc.events {
				t.Errorf("events: got %q, want %q", ev, tc.events)
			}
		})
	}
}

// Turning Auto off disables the hints it gave, with kube's Event.
func TestHintsAutoTurnedOff(t *testing.T) {
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range []*corev1.Node{hintNode("node-1", "zone-a", "2"), hintNode("node-2", "zone-b", "2")} {
		if err := nodes.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	c := &Controller{nodes: corelisters.NewNodeLister(nodes), topology: topologycache.NewTopologyCache()}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: map[string]string{corev1.AnnotationTopologyMode: "Auto"}}}
	slice := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{hintEndpoint("10.0.0.1@node-1/zone-a"), hintEndpoint("10.0.0.2@node-2/zone-b")}}
	create, _, _ := c.hints(svc, &topologycache.SliceInfo{ServiceKey: "ns/web", AddressType: discoveryv1.AddressTypeIPv4, ToCreate: []*discoveryv1.EndpointSlice{slice}})
	if got := hintsOf(create[0]); got != "10.0.0.1:zone-a/ 10.0.0.2:zone-b/" {
		t.Fatalf("hints with Auto: %s", got)
	}
	svc.Annotations[corev1.AnnotationTopologyMode] = "Disabled"
	_, update, events := c.hints(svc, &topologycache.SliceInfo{ServiceKey: "ns/web", AddressType: discoveryv1.AddressTypeIPv4, Unchanged: []*discoveryv1.EndpointSlice{create[0]}})
	if len(update) != 1 || hintsOf(update[0]) != "10.0.0.1: 10.0.0.2:" {
		t.Errorf("updates after Auto went: %d", len(update))
	}
	if len(events) != 1 || events[0].Reason != "TopologyAwareHintsDisabled" || events[0].Message != "Topology Aware Hints has been disabled, addressType: IPv4" {
		t.Errorf("events: %+v", events)
	}
}
