package proxy

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// hinted is an endpoint of the table below: "ip zones/nodes", "!" after the IP for one not
// ready, "*" for one on this node (node-1); zones and nodes comma-separated.
func hinted(s string) SliceRecordEndpoint {
	ipPart, hints, _ := strings.Cut(s, " ")
	e := SliceRecordEndpoint{NodeName: "node-9", Ready: true, Serving: true}
	for strings.HasSuffix(ipPart, "!") || strings.HasSuffix(ipPart, "*") {
		if strings.HasSuffix(ipPart, "!") {
			e.Ready, e.Serving = false, false
		} else {
			e.NodeName = "node-1"
		}
		ipPart = ipPart[:len(ipPart)-1]
	}
	e.IP = ipPart
	zones, nodes, _ := strings.Cut(hints, "/")
	if zones != "" || nodes != "" {
		e.Hints = &EndpointHints{}
		if zones != "" {
			e.Hints.Zones = strings.Split(zones, ",")
		}
		if nodes != "" {
			e.Hints.Nodes = strings.Split(nodes, ",")
		}
	}
	return e
}

func ips(eps []Endpoint) string {
	var out []string
	for _, e := range eps {
		out = append(out, e.IP)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// The cases of kube-proxy's TestCategorizeEndpoints (pkg/proxy/topology_test.go) that
// concern topology: the cluster endpoints (Usable(false)) follow the hints for this node's
// zone or name, the local ones (Usable(true)) do not.
func TestTopologyCategorizesEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name           string
		node, zone     string
		endpoints      []string
		cluster, local string
	}{
		{name: "every endpoint hinted, some for this zone", zone: "zone-a",
			endpoints: []string{"10.1.2.3 zone-a", "10.1.2.4 zone-b", "10.1.2.5 zone-c", "10.1.2.6 zone-a"},
			cluster:   "10.1.2.3 10.1.2.6"},
		{name: "local endpoints ignore topology", zone: "zone-a",
			endpoints: []string{"10.1.2.3* zone-a", "10.1.2.4* zone-b", "10.1.2.5 zone-c", "10.1.2.6 zone-a"},
			cluster:   "10.1.2.3 10.1.2.6", local: "10.1.2.3 10.1.2.4"},
		{name: "node without a zone label", endpoints: []string{"10.1.2.3 zone-a"}, cluster: "10.1.2.3"},
		{name: "node in a zone no endpoint is hinted for", zone: "zone-b", endpoints: []string{"10.1.2.3 zone-a"}, cluster: "10.1.2.3"},
		{name: "an unready endpoint is left out", zone: "zone-a",
			endpoints: []string{"10.1.2.3 zone-a", "10.1.2.4 zone-b", "10.1.2.5 zone-c", "10.1.2.6! zone-a"},
			cluster:   "10.1.2.3"},
		{name: "only unready endpoints in this zone: no filtering", zone: "zone-a",
			endpoints: []string{"10.1.2.3! zone-a", "10.1.2.4 zone-b", "10.1.2.5 zone-c", "10.1.2.6! zone-a"},
			cluster:   "10.1.2.4 10.1.2.5"},
		{name: "a ready endpoint without a hint: no filtering", zone: "zone-a",
			endpoints: []string{"10.1.2.3 zone-a", "10.1.2.4 zone-b", "10.1.2.5", "10.1.2.6 zone-a"},
			cluster:   "10.1.2.3 10.1.2.4 10.1.2.5 10.1.2.6"},
		{name: "several zones per endpoint", zone: "zone-c",
			endpoints: []string{"10.1.2.3 zone-a,zone-b,zone-c", "10.1.2.4 zone-b,zone-c", "10.1.2.5 zone-b,zone-d", "10.1.2.6 zone-c"},
			cluster:   "10.1.2.3 10.1.2.4 10.1.2.6"},
		{name: "PreferSameNode", zone: "zone-a",
			endpoints: []string{"10.1.2.3 zone-a/node-1", "10.1.2.4 zone-b/node-2", "10.1.2.5 zone-c/node-3", "10.1.2.6 zone-a/node-4"},
			cluster:   "10.1.2.3"},
		{name: "PreferSameNode ignored when an endpoint has no hints", zone: "zone-a",
			endpoints: []string{"10.1.2.3 zone-a/node-1", "10.1.2.4", "10.1.2.5 zone-c/node-3", "10.1.2.6 zone-a/node-4"},
			cluster:   "10.1.2.3 10.1.2.4 10.1.2.5 10.1.2.6"},
		{name: "PreferSameNode falls back to the zone when none is for this node", node: "node-0", zone: "zone-a",
			endpoints: []string{"10.1.2.3 zone-a/node-1", "10.1.2.4 zone-b/node-2", "10.1.2.5 zone-c/node-3", "10.1.2.6 zone-a/node-4"},
			cluster:   "10.1.2.3 10.1.2.6"},
		{name: "no ready endpoint: the serving terminating ones, whatever the hints", zone: "zone-a",
			endpoints: []string{"10.1.2.3! zone-b"}, cluster: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &SliceRecord{Namespace: "ns", Name: "web-1", Service: "web", AddressType: "IPv4",
				Ports: []SliceRecordPort{{Protocol: corev1.ProtocolTCP, Port: 80}}}
			for _, e := range tc.endpoints {
				s.Endpoints = append(s.Endpoints, hinted(e))
			}
			svc := &ServiceRecord{Namespace: "ns", Name: "web", ClusterIP: "10.96.0.10", Ports: []ServiceRecordPort{{Protocol: corev1.ProtocolTCP, Port: 80}}}
			node := tc.node
			if node == "" {
				node = "node-1"
			}
			sp := portOf(svc, &svc.Ports[0], []*SliceRecord{s}, node, NodeFacts{Zone: tc.zone})
			if got := ips(sp.Usable(false)); got != tc.cluster {
				t.Errorf("cluster endpoints: got %q, want %q", got, tc.cluster)
			}
			if got := ips(sp.Usable(true)); got != tc.local {
				t.Errorf("local endpoints: got %q, want %q", got, tc.local)
			}
		})
	}
}

// A serving terminating endpoint hinted elsewhere still drains cluster traffic when no
// endpoint is ready (kube-proxy's fallback takes no account of hints).
func TestTopologyTerminatingFallback(t *testing.T) {
	s := &SliceRecord{Namespace: "ns", Name: "web-1", Service: "web", AddressType: "IPv4",
		Ports:     []SliceRecordPort{{Protocol: corev1.ProtocolTCP, Port: 80}},
		Endpoints: []SliceRecordEndpoint{{IP: "10.1.2.3", NodeName: "node-2", Serving: true, Terminating: true, Hints: &EndpointHints{Zones: []string{"zone-b"}}}}}
	svc := &ServiceRecord{Namespace: "ns", Name: "web", ClusterIP: "10.96.0.10", Ports: []ServiceRecordPort{{Protocol: corev1.ProtocolTCP, Port: 80}}}
	sp := portOf(svc, &svc.Ports[0], []*SliceRecord{s}, "node-1", NodeFacts{Zone: "zone-a"})
	if got := ips(sp.Usable(false)); got != "10.1.2.3" {
		t.Errorf("cluster endpoints: got %q", got)
	}
}

// The hints come from the EndpointSlice's through its record, and the node's zone from
// SetNode: a new zone needs a full snapshot (Ready says no), which reads against it.
func TestSnapshotReadsHintsAgainstTheZone(t *testing.T) {
	svcIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	sliceIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	slice := testSlice("web", "10.244.1.5")
	slice.Endpoints = []discoveryv1.Endpoint{
		{Addresses: []string{"10.244.1.5"}, NodeName: ptr.To("node-1"), Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "a"}}}},
		{Addresses: []string{"10.244.2.5"}, NodeName: ptr.To("node-2"), Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "b"}}}},
	}
	for _, add := range []error{svcIdx.Add(ServiceRecordOf(testService("web", "10.96.0.10"))), sliceIdx.Add(SliceRecordOf(slice))} {
		if add != nil {
			t.Fatal(add)
		}
	}
	sn := &Snapshotter{Source: Records(svcIdx, sliceIdx), NodeName: "node-1"}
	cluster := func() string {
		t.Helper()
		ports, err := sn.Snapshot()
		if err != nil || len(ports) != 1 {
			t.Fatalf("snapshot: %v %v", ports, err)
		}
		return ips(ports[0].Usable(false))
	}
	if got := cluster(); got != "10.244.1.5 10.244.2.5" {
		t.Errorf("without a zone: %q", got)
	}
	if !sn.SetNode(NodeFacts{Zone: "b"}) || sn.SetNode(NodeFacts{Zone: "b"}) {
		t.Error("SetNode says a change only when the zone is new")
	}
	if sn.Ready() {
		t.Error("Ready after the zone changed: a partial sync would keep the old zone's endpoints")
	}
	if got := cluster(); got != "10.244.2.5" {
		t.Errorf("in zone b: %q", got)
	}
	if !sn.Ready() {
		t.Error("not Ready after a snapshot in the new zone")
	}
}
