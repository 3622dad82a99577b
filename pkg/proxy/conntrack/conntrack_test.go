package conntrack

import (
	"fmt"
	"net"
	"sort"
	"testing"

	"github.com/minik8s/minik8s/internal/netnstest"
	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
)

func flow(proto uint8, dst string, dport uint16, replySrc string, replyPort uint16) *netlink.ConntrackFlow {
	f := &netlink.ConntrackFlow{}
	f.Forward.Protocol, f.Forward.SrcIP, f.Forward.DstIP, f.Forward.DstPort = proto, net.ParseIP("10.200.0.99"), net.ParseIP(dst), dport
	f.Reverse.Protocol, f.Reverse.SrcIP, f.Reverse.SrcPort = proto, net.ParseIP(replySrc), replyPort
	return f
}

func TestStaleUDPFlows(t *testing.T) {
	ports := []proxy.ServicePort{
		{Name: "default/dns:dns", Protocol: corev1.ProtocolUDP, ClusterIP: "10.96.0.10", Port: 53, NodePort: 30053,
			LoadBalancerIPs: []string{"10.200.0.200"},
			Endpoints: []proxy.Endpoint{{IP: "10.244.1.2", Port: 5353, Ready: true, Serving: true},
				{IP: "10.244.2.2", Port: 5353, Serving: true, Terminating: true}, // still serving: kept
				{IP: "10.244.3.3", Port: 5353}}},                                 // neither ready nor serving
		{Name: "default/empty", Protocol: corev1.ProtocolUDP, ClusterIP: "10.96.0.11", Port: 53}, // no endpoints: left alone
		{Name: "default/web", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.12", Port: 80,
			Endpoints: []proxy.Endpoint{{IP: "10.244.1.2", Port: 80, Ready: true, Serving: true}}},
	}
	s := NewStale(ports)
	for _, c := range []struct {
		name  string
		f     *netlink.ConntrackFlow
		stale bool
	}{
		{"to a serving endpoint", flow(17, "10.96.0.10", 53, "10.244.1.2", 5353), false},
		{"to a serving endpoint's address on the port it had before (targetPort changed)", flow(17, "10.96.0.10", 53, "10.244.1.2", 53), true},
		{"node port to a serving endpoint's address on another port", flow(17, "10.200.0.11", 30053, "10.244.1.2", 53), true},
		{"to a terminating endpoint that still serves", flow(17, "10.96.0.10", 53, "10.244.2.2", 5353), false},
		{"to an endpoint that is gone", flow(17, "10.96.0.10", 53, "10.244.9.9", 5353), true},
		{"to an endpoint that does not serve", flow(17, "10.96.0.10", 53, "10.244.3.3", 5353), true},
		{"never NATed (sent before there was an endpoint)", flow(17, "10.96.0.10", 53, "10.96.0.10", 53), true},
		{"load balancer IP to a gone endpoint", flow(17, "10.200.0.200", 53, "10.244.9.9", 5353), true},
		{"node port on any address to a gone endpoint", flow(17, "10.200.0.11", 30053, "10.244.9.9", 5353), true},
		{"node port to a serving endpoint", flow(17, "10.200.0.11", 30053, "10.244.1.2", 5353), false},
		{"another port of the cluster IP", flow(17, "10.96.0.10", 54, "10.244.9.9", 5353), false},
		{"a UDP service without endpoints", flow(17, "10.96.0.11", 53, "10.96.0.11", 53), false},
		{"TCP", flow(6, "10.96.0.12", 80, "10.244.9.9", 80), false},
	} {
		if got := s.MatchConntrackFlow(c.f); got != c.stale {
			t.Errorf("%s: stale = %v, want %v", c.name, got, c.stale)
		}
	}
	if !NewStale(ports[1:]).Empty() {
		t.Error("no UDP service port with endpoints: want an empty filter (no conntrack dump)")
	}
}

// TestCleanStaleUDPInKernel deletes stale flows from a real conntrack table: in a network
// namespace of the test's own, with entries made through netlink as NAT leaves them.
func TestCleanStaleUDPInKernel(t *testing.T) {
	testenv.RequireRoot(t, "a network namespace and its conntrack table")
	netnstest.Enter(t)
	add := func(sport uint16, dst string, dport uint16, replySrc string, replyPort uint16) {
		t.Helper()
		f := &netlink.ConntrackFlow{FamilyType: netlink.FAMILY_V4, TimeOut: 60,
			Forward: netlink.IPTuple{SrcIP: net.ParseIP("10.200.0.3").To4(), DstIP: net.ParseIP(dst).To4(), Protocol: 17, SrcPort: sport, DstPort: dport},
			Reverse: netlink.IPTuple{SrcIP: net.ParseIP(replySrc).To4(), DstIP: net.ParseIP("10.200.0.3").To4(), Protocol: 17, SrcPort: replyPort, DstPort: sport}}
		if err := netlink.ConntrackCreate(netlink.ConntrackTable, netlink.FAMILY_V4, f); err != nil {
			t.Fatalf("create conntrack entry: %v", err)
		}
	}
	add(1000, "10.96.0.10", 53, "10.244.1.2", 5353)     // to the serving endpoint: kept
	add(1001, "10.96.0.10", 53, "10.244.9.9", 5353)     // to a removed endpoint
	add(1002, "10.96.0.10", 53, "10.96.0.10", 53)       // before there was an endpoint
	add(1003, "10.200.0.11", 30053, "10.244.9.9", 5353) // node port, removed endpoint
	add(1004, "10.96.0.99", 53, "10.244.9.9", 5353)     // another service: kept
	ports := []proxy.ServicePort{{Name: "default/dns", Protocol: corev1.ProtocolUDP, ClusterIP: "10.96.0.10", Port: 53, NodePort: 30053,
		Endpoints: []proxy.Endpoint{{IP: "10.244.1.2", Port: 5353, Ready: true, Serving: true}}}}
	n, err := CleanStaleUDP(ports)
	if err != nil || n != 3 {
		t.Errorf("CleanStaleUDP deleted %d entries (%v), want 3", n, err)
	}
	flows, err := netlink.ConntrackTableList(netlink.ConntrackTable, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var left []uint16
	for _, f := range flows {
		left = append(left, f.Forward.SrcPort)
	}
	sort.Slice(left, func(i, j int) bool { return left[i] < left[j] })
	if fmt.Sprint(left) != "[1000 1004]" {
		t.Errorf("flows left by source port: %v, want [1000 1004]", left)
	}
}
