// Package ipvs is miniproxy's IPVS proxier, laid out as kube-proxy's IPVS mode: an IPVS
// virtual server for every ClusterIP, externalIP, LoadBalancer IP and nodeIP:NodePort with a
// real server per usable endpoint; the virtual addresses bound to the dummy device
// kube-ipvs0 (so the node accepts their packets); kube-proxy's ip sets (pkg/proxy/ipset)
// and the constant handful of iptables rules matching them, for masquerade and filtering.
// This file computes the wanted state of a service port; tracker.go keeps the wanted
// state of all of them between syncs; proxier.go applies it.
package ipvs

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/minik8s/minik8s/pkg/proxy/ipset"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// DummyDevice holds every virtual address, as kube-proxy names it.
const DummyDevice = "kube-ipvs0"

// flagPersistent is IP_VS_SVC_F_PERSISTENT: ClientIP affinity.
const flagPersistent = 0x1

// flagFallback is IP_VS_SVC_F_SCHED1, which the sh and mh schedulers read as "fallback":
// a client hashed to a real server at weight 0 (draining, see removeRealServers) goes to
// another one instead of being refused.
const flagFallback = 0x8

// hasFallback says whether sched is a hashing scheduler that takes flagFallback.
func hasFallback(sched string) bool { return sched == "sh" || sched == "mh" }

// Schedulers are the IPVS schedulers --ipvs-scheduler accepts (ip_vs_<name> modules).
var Schedulers = []string{"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "mh"}

// Config is what shapes the IPVS state beyond the Services themselves.
type Config struct {
	Scheduler     string // "" is rr
	ClusterCIDR   string // traffic to a ClusterIP from outside it is masqueraded
	MasqueradeAll bool
	// NodeIPs lists the addresses NodePorts answer on; nil reads this node's interfaces
	// (every address but loopback, link-local and kube-ipvs0's).
	NodeIPs func() ([]net.IP, error)
	// IPVS connection timeouts (--ipvs-tcp-timeout, --ipvs-tcpfin-timeout,
	// --ipvs-udp-timeout); 0 leaves the kernel's.
	TCPTimeout, TCPFinTimeout, UDPTimeout time.Duration
	// StrictARP (--ipvs-strict-arp): the node answers ARP only for addresses of the
	// interface asked, not for kube-ipvs0's (arp_ignore=1, arp_announce=2).
	StrictARP bool
}

// vsKey names a virtual server as IPVS does: protocol, address, port.
type vsKey struct {
	Proto uint16
	IP    string
	Port  uint16
}

func (k vsKey) String() string {
	return fmt.Sprintf("%s %s", protoName(k.Proto), net.JoinHostPort(k.IP, fmt.Sprint(k.Port)))
}

// virtualServer is one IPVS service with its real servers ("ip:port" -> weight).
type virtualServer struct {
	Key        vsKey
	Scheduler  string
	Persistent uint32 // ClientIP affinity timeout in seconds, 0 for none
	Fallback   bool   // flagFallback set
	Dests      map[string]int
	Service    string // the service port it serves, for logs
}

// state is everything a sync wants in the kernel.
type state struct {
	services map[vsKey]*virtualServer
	addrs    map[string]bool // on kube-ipvs0
	sets     map[string]*ipset.Set
}

func protoNumber(p corev1.Protocol) uint16 {
	switch p {
	case corev1.ProtocolUDP:
		return unix.IPPROTO_UDP
	case corev1.ProtocolSCTP:
		return unix.IPPROTO_SCTP
	}
	return unix.IPPROTO_TCP
}

func protoName(p uint16) string {
	switch p {
	case unix.IPPROTO_UDP:
		return "UDP"
	case unix.IPPROTO_SCTP:
		return "SCTP"
	}
	return "TCP"
}

// desiredState turns the snapshot into virtual servers, bound addresses and set entries,
// computing every service port (the full recompute; Proxier keeps a tracker instead).
func desiredState(cfg Config, ports []proxy.ServicePort, nodeIPs []net.IP) *state {
	t := newTracker(cfg, nodeIPs)
	t.update(ports, nodeIPs)
	return t.st
}

// portPart is one service port's share of the wanted state.
type portPart struct {
	services []*virtualServer
	addrs    []string // on kube-ipvs0
	entries  []setEntry
}

// setEntry is one entry of one ip set.
type setEntry struct{ set, entry string }

// computePort is the wanted state of one service port.
func computePort(sched string, sp *proxy.ServicePort, nodeIPs []net.IP) portPart {
	var part portPart
	if net.ParseIP(sp.ClusterIP).To4() == nil {
		return part // IPv4 only, as the rest of miniproxy
	}
	proto := protoNumber(sp.Protocol)
	proto4set := strings.ToLower(string(sp.Protocol))
	dests := func(local bool) map[string]int {
		eps := sp.Usable(local)
		if local && len(eps) == 0 {
			// As kube-proxy's IPVS mode (kubernetes#97081): with no endpoint here, a Local
			// policy sends to the cluster's, so this node's pods and the node itself still
			// reach the Service (an external client's replies come from the pod and are lost).
			eps = sp.Usable(false)
		}
		out := map[string]int{}
		for _, e := range eps {
			out[e.String()] = 1
		}
		return out
	}
	clusterDests, externalDests := dests(sp.InternalLocal), dests(sp.ExternalLocal)
	add := func(ip string, port int32, d map[string]int) {
		k := vsKey{Proto: proto, IP: ip, Port: uint16(port)}
		part.services = append(part.services, &virtualServer{Key: k, Scheduler: sched, Persistent: uint32(max(sp.AffinitySeconds, 0)), Fallback: hasFallback(sched), Dests: d, Service: sp.Name})
	}
	entry := func(set, e string) { part.entries = append(part.entries, setEntry{set, e}) }
	bind := func(ip string) {
		part.addrs = append(part.addrs, ip)
		entry(ipset.IPVSIPs, ip)
	}

	add(sp.ClusterIP, sp.Port, clusterDests)
	bind(sp.ClusterIP)
	entry(ipset.ClusterIP, ipset.IPPort(sp.ClusterIP, proto4set, sp.Port))
	for _, ip := range sp.ExternalIPs {
		if net.ParseIP(ip).To4() == nil {
			continue
		}
		add(ip, sp.Port, externalDests)
		bind(ip)
		set := ipset.ExternalIP
		if sp.ExternalLocal {
			set = ipset.ExternalIPLocal
		}
		entry(set, ipset.IPPort(ip, proto4set, sp.Port))
	}
	for _, ip := range sp.LoadBalancerIPs {
		if net.ParseIP(ip).To4() == nil {
			continue
		}
		add(ip, sp.Port, externalDests)
		bind(ip)
		entry(ipset.LoadBalancer, ipset.IPPort(ip, proto4set, sp.Port))
		if sp.ExternalLocal {
			entry(ipset.LoadBalancerLocal, ipset.IPPort(ip, proto4set, sp.Port))
		}
		// loadBalancerSourceRanges, as kube-proxy's syncService: filter
		// KUBE-SOURCE-RANGES-FIREWALL drops what comes from outside them.
		if len(sp.SourceRanges) > 0 {
			entry(ipset.LoadBalancerFW, ipset.IPPort(ip, proto4set, sp.Port))
			for _, cidr := range sp.SourceRanges {
				// A host range as ipset save prints it, so a full sync reads back what it wrote.
				entry(ipset.LoadBalancerSourceCIDR, ipset.IPPort(ip, proto4set, sp.Port)+","+strings.TrimSuffix(cidr, "/32"))
			}
			// The node's own connections to the address (bound to kube-ipvs0) come from it:
			// let them in when the ranges let the node in (kube-proxy's allowFromNode);
			// otherwise filter KUBE-IPVS-OUT-FILTER drops them (buildRules).
			if sp.AllowFromNode {
				entry(ipset.LoadBalancerSourceIP, ipset.IPPortIP(ip, proto4set, sp.Port, ip))
			}
		}
	}
	if sp.NodePort != 0 {
		for _, ip := range nodeIPs {
			add(ip.String(), sp.NodePort, externalDests)
		}
		switch sp.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP:
			set, local := ipset.NodePortTCP, ipset.NodePortLocalTCP
			if sp.Protocol == corev1.ProtocolUDP {
				set, local = ipset.NodePortUDP, ipset.NodePortLocalUDP
			}
			entry(set, fmt.Sprint(sp.NodePort))
			if sp.ExternalLocal {
				entry(local, fmt.Sprint(sp.NodePort))
			}
		case corev1.ProtocolSCTP:
			for _, ip := range nodeIPs {
				entry(ipset.NodePortSCTP, ipset.IPPort(ip.String(), "sctp", sp.NodePort))
				if sp.ExternalLocal {
					entry(ipset.NodePortLocalSCTP, ipset.IPPort(ip.String(), "sctp", sp.NodePort))
				}
			}
		}
	}
	if sp.HealthCheckNodePort != 0 { // accepted by filter KUBE-NODE-PORT, as kube-proxy
		entry(ipset.HealthCheckNodePort, fmt.Sprint(sp.HealthCheckNodePort))
	}
	// Hairpin: an endpoint on this node reaching its own service through the virtual
	// address must be masqueraded, or it answers itself directly.
	for _, e := range sp.Endpoints {
		if e.Local {
			entry(ipset.LoopBack, ipset.IPPortIP(e.IP, proto4set, e.Port, e.IP))
		}
	}
	return part
}

// orderedSets lists the state's sets in kube-proxy's order.
func (st *state) orderedSets() []*ipset.Set {
	var out []*ipset.Set
	for _, n := range ipset.KubeSetNames() {
		out = append(out, st.sets[n])
	}
	return out
}

// sortedKeys lists virtual servers in a stable order (logs, tests, ipvsadm-like output).
func sortedKeys[V any](m map[vsKey]V) []vsKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b vsKey) int {
		return cmp.Or(cmp.Compare(a.IP, b.IP), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Proto, b.Proto))
	})
}
