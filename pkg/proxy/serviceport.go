// Package proxy turns Services and EndpointSlices into what a node's kernel needs to
// deliver Service traffic: a snapshot of every service port with the endpoints it may use
// (this file), which a proxier (pkg/proxy/iptables) writes as rules.
package proxy

import (
	"fmt"
	"net"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// ServicePort is one port of one Service as the proxy programs it.
type ServicePort struct {
	// Name is kube-proxy's ServicePortName: "namespace/service:port" (":port" only when
	// the port has a name); chain names are hashed from it.
	Name            string
	Protocol        corev1.Protocol
	ClusterIP       string // "" for headless Services
	Port            int32
	NodePort        int32
	ExternalIPs     []string
	LoadBalancerIPs []string
	// SourceRanges are the CIDRs allowed to reach the load balancer IPs
	// (spec.loadBalancerSourceRanges); empty allows everyone.
	SourceRanges []string
	// AllowFromNode: a source range holds this node's address, so the node may reach the
	// load balancer IPs too, from which its packets to them come when the address is a
	// local one (kube-proxy's allowFromNode).
	AllowFromNode bool
	// AffinitySeconds > 0 pins a client IP to one endpoint that long (ClientIP affinity).
	AffinitySeconds int32
	ExternalLocal   bool // externalTrafficPolicy: Local
	InternalLocal   bool // internalTrafficPolicy: Local
	// HealthCheckNodePort is the Service's spec.healthCheckNodePort (LoadBalancer with
	// externalTrafficPolicy Local), 0 otherwise.
	HealthCheckNodePort int32
	Endpoints           []Endpoint
}

// Endpoint is one address:port a service port may send to.
type Endpoint struct {
	IP          string
	Port        int32
	Ready       bool
	Serving     bool
	Terminating bool
	Local       bool // on this node
	// Elsewhere: topology hints send this node's cluster traffic to other endpoints
	// (topology.go); local traffic policies still use it.
	Elsewhere bool
}

func (e Endpoint) String() string { return net.JoinHostPort(e.IP, fmt.Sprint(e.Port)) }

// Usable are the endpoints traffic goes to, as kube-proxy's CategorizeEndpoints: the
// ready ones (for cluster traffic, those the topology hints leave to this node), or when
// none is ready, the serving ones that are terminating (so connections drain instead of
// failing). local keeps only this node's, whatever the hints.
func (sp *ServicePort) Usable(local bool) []Endpoint {
	pick := func(ok func(Endpoint) bool) []Endpoint {
		var out []Endpoint
		for _, e := range sp.Endpoints {
			if ok(e) && (!local || e.Local) {
				out = append(out, e)
			}
		}
		return out
	}
	if ready := pick(func(e Endpoint) bool { return e.Ready && (local || !e.Elsewhere) }); len(ready) > 0 {
		return ready
	}
	return pick(func(e Endpoint) bool { return e.Serving && e.Terminating })
}

// NoLocalEndpoints says which of sp's Local traffic policies find no usable endpoint on
// this node while the Service has some elsewhere (the cluster IP, or external traffic,
// is then dropped here): what kube-proxy counts in
// kubeproxy_sync_proxy_rules_no_local_endpoints_total.
func (sp *ServicePort) NoLocalEndpoints() (internal, external bool) {
	if !sp.InternalLocal && !sp.ExternalLocal || len(sp.Usable(false)) == 0 || len(sp.Usable(true)) > 0 {
		return false, false
	}
	return sp.InternalLocal, sp.ExternalLocal
}

// Snapshot reads every Service with a cluster IP and its EndpointSlices into service ports,
// sorted by name. nodeName says which endpoints are local.
func Snapshot(services corelisters.ServiceLister, slices discoverylisters.EndpointSliceLister, nodeName string) ([]ServicePort, error) {
	return (&Snapshotter{Services: services, Slices: slices, NodeName: nodeName}).Snapshot()
}

// Snapshotter takes snapshots with memory of the last one: the records it read of each
// Service and its EndpointSlices (informer caches replace records, never change them), so
// Changes can leave out a Service whose records are those it read last time (the very
// ones, or equal ones) and say what its ports were. It keeps the records, not the ports:
// a port's Before is made again from them when the Service changes (at 10 000 Services
// the ports kept were ~2.5 MB of the daemon's heap; the proxiers forget the snapshot
// before each full one, so an unchanged Service's ports were never reused).
type Snapshotter struct {
	// Source is read when set (miniproxy: Records); otherwise Services and Slices, API
	// objects made records as they are read.
	Source   Source
	Services corelisters.ServiceLister
	Slices   discoverylisters.EndpointSliceLister
	NodeName string
	last     map[nsName]snapshotEntry
	node     NodeFacts // what the last snapshot was read against

	mu       sync.Mutex
	marks    map[nsName][]string // Services marked since the last Snapshot or Changes: slice names the events gave
	nextNode NodeFacts           // SetNode's
}

// NodeFacts are what the service ports depend on of this node's Node object.
type NodeFacts struct {
	Zone string // the topology.kubernetes.io/zone label, which topology hints are read against
	// IP is the node's IPv4 address (its first InternalIP, else ExternalIP, as kube-proxy's
	// node IP), which loadBalancerSourceRanges may hold; "" when it has none.
	IP string
}

type nsName struct{ namespace, name string }

type snapshotEntry struct {
	svc    *ServiceRecord
	slices []*SliceRecord
}

// unchanged: svc and its slices are those e was made of.
func (e snapshotEntry) unchanged(svc *ServiceRecord, list []*SliceRecord) bool {
	return (e.svc == svc || reflect.DeepEqual(e.svc, svc)) &&
		slices.EqualFunc(e.slices, list, func(a, b *SliceRecord) bool { return a == b || reflect.DeepEqual(a, b) })
}

func (sn *Snapshotter) source() Source {
	if sn.Source != nil {
		return sn.Source
	}
	return Listers(sn.Services, sn.Slices)
}

// Snapshot reads every Service with a cluster IP and its EndpointSlices into service
// ports, sorted by name.
func (sn *Snapshotter) Snapshot() ([]ServicePort, error) {
	sn.takeMarks() // all of it is read now
	sn.mu.Lock()
	sn.node = sn.nextNode
	sn.mu.Unlock()
	src := sn.source()
	svcs, err := src.Services()
	if err != nil {
		return nil, err
	}
	// One pass over every slice, grouped by service: a label-selector list per service
	// would scan every slice of the namespace each time, quadratic at 10 000 services.
	all, err := src.Slices()
	if err != nil {
		return nil, err
	}
	byService := make(map[nsName][]*SliceRecord, len(svcs))
	for _, s := range all {
		if s.Service != "" {
			k := nsName{s.Namespace, s.Service}
			byService[k] = append(byService[k], s)
		}
	}
	next := make(map[nsName]snapshotEntry, len(svcs))
	out := make([]ServicePort, 0, len(svcs))
	for _, svc := range svcs {
		if !proxied(svc) {
			continue
		}
		k := nsName{svc.Namespace, svc.Name}
		list := byService[k]
		sortSlices(list)
		e := snapshotEntry{svc, list}
		next[k] = e
		out = sn.ports(out, e)
	}
	sn.last = next
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Protocol < out[j].Protocol
	})
	return out, nil
}

// proxied: a Service with a cluster IP (not headless, not ExternalName) has rules.
func proxied(svc *ServiceRecord) bool {
	return svc.Type != corev1.ServiceTypeExternalName && svc.ClusterIP != corev1.ClusterIPNone && svc.ClusterIP != ""
}

// ports appends e's service ports, read from its Service and slices (sorted by name), to out.
func (sn *Snapshotter) ports(out []ServicePort, e snapshotEntry) []ServicePort {
	for i := range e.svc.Ports {
		out = append(out, portOf(e.svc, &e.svc.Ports[i], e.slices, sn.NodeName, sn.node))
	}
	return out
}

func sortSlices(list []*SliceRecord) {
	if len(list) > 1 {
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	}
}

// portOf is service port p of svc with the endpoints of slices, svc's (sorted by name), as
// the node nodeName, whose Node says node, sees them.
func portOf(svc *ServiceRecord, p *ServiceRecordPort, slices []*SliceRecord, nodeName string, node NodeFacts) ServicePort {
	name := svc.Namespace + "/" + svc.Name
	if p.Name != "" {
		name += ":" + p.Name
	}
	sp := ServicePort{
		Name: name, Protocol: p.Protocol, ClusterIP: svc.ClusterIP, Port: p.Port, NodePort: p.NodePort,
		ExternalIPs:     svc.ExternalIPs,
		InternalLocal:   svc.InternalPolicyLocal,
		AffinitySeconds: svc.AffinitySeconds, HealthCheckNodePort: svc.HealthCheckNodePort,
	}
	if svc.Type == corev1.ServiceTypeLoadBalancer {
		sp.LoadBalancerIPs = svc.LoadBalancerIPs
		sp.SourceRanges = svc.SourceRanges
		sp.AllowFromNode = anyHolds(sp.SourceRanges, node.IP)
	}
	// externalTrafficPolicy applies to what external traffic reaches (kube-proxy's
	// UsesLocalEndpoints): a LoadBalancer without node ports has nothing until its address.
	sp.ExternalLocal = svc.ExternalPolicyLocal && (sp.NodePort != 0 || len(sp.ExternalIPs) > 0 || len(sp.LoadBalancerIPs) > 0)
	type ipPort struct {
		ip   string
		port int32
	}
	seen := map[ipPort]int{} // index in eps
	var eps []hintedEndpoint
	for _, s := range slices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		var port *int32
		for i, ep := range s.Ports {
			if ep.Name == p.Name && ep.Protocol == sp.Protocol {
				port = &s.Ports[i].Port
			}
		}
		if port == nil {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.IP == "" {
				continue
			}
			e := Endpoint{IP: ep.IP, Port: *port, Ready: ep.Ready, Serving: ep.Serving, Terminating: ep.Terminating,
				Local: ep.NodeName == nodeName && nodeName != ""}
			// The same address in two slices (mid-update, or a new pod given a terminating
			// one's address) counts once: the one not terminating, as kube-proxy's addEndpoints.
			k := ipPort{e.IP, e.Port}
			if i, ok := seen[k]; !ok {
				seen[k] = len(eps)
				eps = append(eps, hintedEndpoint{e, ep.Hints})
			} else if !e.Terminating {
				eps[i] = hintedEndpoint{e, ep.Hints}
			}
		}
	}
	if len(eps) > 0 {
		sp.Endpoints = applyTopology(eps, nodeName, node.Zone)
	}
	sort.Slice(sp.Endpoints, func(i, j int) bool {
		a, b := sp.Endpoints[i], sp.Endpoints[j]
		if a.IP != b.IP {
			return a.IP < b.IP
		}
		return a.Port < b.Port
	})
	return sp
}

// sourceRanges are a LoadBalancer Service's allowed client IPv4 CIDRs: the spec field, or
// when it is empty the older annotation; malformed ones are left out. A zero one
// (0.0.0.0/0) allows everyone: none, no firewall, as kube-proxy's IsZeroCIDR.
func sourceRanges(svc *corev1.Service) []string {
	ranges := svc.Spec.LoadBalancerSourceRanges
	if len(ranges) == 0 {
		if a := svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]; a != "" {
			ranges = strings.Split(a, ",")
		}
	}
	var out []string
	for _, r := range ranges {
		if _, cidr, err := net.ParseCIDR(strings.TrimSpace(r)); err == nil && cidr.IP.To4() != nil {
			if ones, _ := cidr.Mask.Size(); ones == 0 {
				return nil
			}
			out = append(out, cidr.String())
		}
	}
	return out
}

// anyHolds: one of cidrs (as sourceRanges keeps them) holds ip.
func anyHolds(cidrs []string, ip string) bool {
	addr := net.ParseIP(ip)
	return addr != nil && slices.ContainsFunc(cidrs, func(c string) bool {
		_, n, err := net.ParseCIDR(c)
		return err == nil && n.Contains(addr)
	})
}
