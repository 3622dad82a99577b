// Package conntrack deletes the UDP conntrack entries that would keep a Service's traffic
// going where it no longer should, as kube-proxy does after every sync in either mode.
//
// UDP has no connection to reset: while packets keep coming, the kernel keeps the entry
// that NATed the first of them, so a client whose endpoint went away keeps sending to it,
// and a client that sent before the Service had any endpoint keeps an entry that NATs to
// nothing. Both are entries addressed to a UDP service port that has serving endpoints,
// whose reply source address and port (the endpoint the flow was sent to, or the service
// address itself when it was not NATed) are none of theirs; those are deleted, through
// netlink, as kube-proxy's CleanStaleEntries (an endpoint whose port changed is another).
package conntrack

import (
	"fmt"
	"net/netip"

	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
)

// Stale matches the stale UDP flows of a snapshot's service ports.
type Stale struct {
	// byFrontend: cluster, external and load balancer IP:port -> the serving endpoints.
	byFrontend map[netip.AddrPort]map[netip.AddrPort]bool
	// byNodePort: a node port (on any address) -> the serving endpoints.
	byNodePort map[uint16]map[netip.AddrPort]bool
}

// NewStale reads which endpoints each UDP service port may send to. Service ports without
// serving endpoints are left alone: nothing better exists for their flows.
func NewStale(ports []proxy.ServicePort) *Stale {
	s := &Stale{byFrontend: map[netip.AddrPort]map[netip.AddrPort]bool{}, byNodePort: map[uint16]map[netip.AddrPort]bool{}}
	for i := range ports {
		sp := &ports[i]
		if sp.Protocol != corev1.ProtocolUDP {
			continue
		}
		// Serving ones, whatever the traffic policies: a change of policy should not cut
		// flows to an endpoint that still serves, as with TCP.
		eps := map[netip.AddrPort]bool{}
		for _, e := range sp.Endpoints {
			if a, err := netip.ParseAddr(e.IP); err == nil && e.Serving {
				eps[netip.AddrPortFrom(a, uint16(e.Port))] = true
			}
		}
		if len(eps) == 0 {
			continue
		}
		for _, ip := range append(append([]string{sp.ClusterIP}, sp.ExternalIPs...), sp.LoadBalancerIPs...) {
			if a, err := netip.ParseAddr(ip); err == nil {
				s.byFrontend[netip.AddrPortFrom(a, uint16(sp.Port))] = eps
			}
		}
		if sp.NodePort != 0 {
			s.byNodePort[uint16(sp.NodePort)] = eps
		}
	}
	return s
}

// Empty says no UDP service port has serving endpoints: nothing can be stale.
func (s *Stale) Empty() bool { return len(s.byFrontend) == 0 && len(s.byNodePort) == 0 }

// MatchConntrackFlow is netlink's filter: whether the flow is stale.
func (s *Stale) MatchConntrackFlow(f *netlink.ConntrackFlow) bool {
	if f.Forward.Protocol != 17 { // UDP
		return false
	}
	dst, ok1 := netip.AddrFromSlice(f.Forward.DstIP)
	replySrc, ok2 := netip.AddrFromSlice(f.Reverse.SrcIP)
	if !ok1 || !ok2 {
		return false
	}
	reply := netip.AddrPortFrom(replySrc.Unmap(), f.Reverse.SrcPort)
	if eps, ok := s.byFrontend[netip.AddrPortFrom(dst.Unmap(), f.Forward.DstPort)]; ok && !eps[reply] {
		return true
	}
	if eps, ok := s.byNodePort[f.Forward.DstPort]; ok && !eps[reply] {
		return true
	}
	return false
}

// CleanStaleUDP deletes the stale UDP flows of ports from this network namespace's
// conntrack table and says how many went. The table is read once (one netlink dump).
func CleanStaleUDP(ports []proxy.ServicePort) (uint, error) {
	s := NewStale(ports)
	if s.Empty() {
		return 0, nil
	}
	n, err := netlink.ConntrackDeleteFilters(netlink.ConntrackTable, netlink.FAMILY_V4, s)
	if err != nil {
		return n, fmt.Errorf("delete stale UDP conntrack entries: %w", err)
	}
	return n, nil
}
