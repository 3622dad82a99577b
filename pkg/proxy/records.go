package proxy

import (
	"net/netip"
	"slices"
	"strings"
	"unique"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ServiceRecord is what the proxy keeps of a Service: the fields its service ports and the
// layer-2 speaker are made of, as kube-proxy's change trackers keep their own small
// structures instead of API objects. At 10 000 Services the informers' cache of trimmed
// API objects was the largest part of miniproxy's memory (docs/performance.md): an API
// struct's fixed size and its pointer fields cannot be trimmed away.
type ServiceRecord struct {
	Namespace, Name string
	// ResourceVersion tells an informer an update from a resync: one with the same version
	// is not passed on.
	ResourceVersion string
	Type            corev1.ServiceType
	ClusterIP       string
	Ports           []ServiceRecordPort
	ExternalIPs     []string
	// LoadBalancerIPs are status.loadBalancer.ingress's IPs (those with one), whatever
	// the type; SourceRanges the allowed client CIDRs (sourceRanges).
	LoadBalancerIPs []string
	SourceRanges    []string
	// AffinitySeconds > 0: ClientIP session affinity, that long.
	AffinitySeconds     int32
	ExternalPolicyLocal bool // externalTrafficPolicy: Local
	InternalPolicyLocal bool // internalTrafficPolicy: Local
	// HealthCheckNodePort is spec.healthCheckNodePort of a LoadBalancer with
	// externalTrafficPolicy Local (0 otherwise), served by pkg/proxy/healthcheck.
	HealthCheckNodePort int32
}

// ServiceRecordPort is one of spec.ports.
type ServiceRecordPort struct {
	Name           string
	Protocol       corev1.Protocol // TCP when the object left it empty
	Port, NodePort int32
}

// SliceRecord is what the proxy keeps of an EndpointSlice.
type SliceRecord struct {
	Namespace, Name, ResourceVersion string
	Service                          string // the kubernetes.io/service-name label
	AddressType                      discoveryv1.AddressType
	Ports                            []SliceRecordPort // those with a port number
	Endpoints                        []SliceRecordEndpoint
}

// SliceRecordPort is one of an EndpointSlice's ports.
type SliceRecordPort struct {
	Name     string
	Protocol corev1.Protocol // TCP when the object left it empty
	Port     int32
}

// SliceRecordEndpoint is one endpoint, its conditions as kube-proxy defaults them.
type SliceRecordEndpoint struct {
	IP                          string // the first address; "" when it has none
	NodeName                    string
	Ready, Serving, Terminating bool
	Hints                       *EndpointHints // nil: none
}

// EndpointHints are an endpoint's topology hints: the zones and the nodes it is meant
// for (forZones, forNodes).
type EndpointHints struct{ Zones, Nodes []string }

// GetObjectMeta lets client-go's informers key, index and compare records as objects
// (meta.Accessor): namespace, name and resource version are all they read.
func (r *ServiceRecord) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name, ResourceVersion: r.ResourceVersion}
}

// GetObjectMeta: as ServiceRecord's.
func (r *SliceRecord) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name, ResourceVersion: r.ResourceVersion}
}

// Compact is the informers' transform (client-go's SetTransform): a Service becomes a
// ServiceRecord, an EndpointSlice a SliceRecord, so the informers' caches hold only
// records and the decoded objects are garbage at once. A record is passed as it is:
// client-go may transform an object twice.
func Compact(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		return ServiceRecordOf(o), nil
	case *discoveryv1.EndpointSlice:
		return SliceRecordOf(o), nil
	}
	return obj, nil
}

// ServiceRecordOf is svc's record.
func ServiceRecordOf(svc *corev1.Service) *ServiceRecord {
	r := &ServiceRecord{Namespace: intern(svc.Namespace), Name: svc.Name, ResourceVersion: svc.ResourceVersion,
		Type: canonical(svc.Spec.Type, corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName), ClusterIP: clusterIPv4(svc), ExternalIPs: ipv4s(svc.Spec.ExternalIPs),
		SourceRanges:        sourceRanges(svc),
		ExternalPolicyLocal: svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal,
		InternalPolicyLocal: ptr.Deref(svc.Spec.InternalTrafficPolicy, corev1.ServiceInternalTrafficPolicyCluster) == corev1.ServiceInternalTrafficPolicyLocal,
	}
	if r.Type == corev1.ServiceTypeLoadBalancer && r.ExternalPolicyLocal {
		r.HealthCheckNodePort = svc.Spec.HealthCheckNodePort
	}
	own := []*string{&r.Name, &r.ResourceVersion, &r.ClusterIP}
	if len(svc.Spec.Ports) > 0 {
		r.Ports = make([]ServiceRecordPort, len(svc.Spec.Ports))
		for i, p := range svc.Spec.Ports {
			r.Ports[i] = ServiceRecordPort{Name: p.Name, Protocol: orTCP(p.Protocol), Port: p.Port, NodePort: p.NodePort}
			own = append(own, &r.Ports[i].Name)
		}
	}
	pack(own)
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		r.AffinitySeconds = corev1.DefaultClientIPServiceAffinitySeconds
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			r.AffinitySeconds = *c.ClientIP.TimeoutSeconds
		}
	}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		// An address of ipMode Proxy is the load balancer's own: it sends to the node
		// ports, and the nodes must not capture it (kube-proxy's IsVIPMode).
		if isIPv4(ing.IP) && ptr.Deref(ing.IPMode, corev1.LoadBalancerIPModeVIP) == corev1.LoadBalancerIPModeVIP {
			r.LoadBalancerIPs = append(r.LoadBalancerIPs, ing.IP)
		}
	}
	return r
}

// The proxy is IPv4 only, as kube-proxy's IPv4 proxier: it reads a Service's IPv4 cluster
// IP and addresses, so an IPv6 one does not become a rule iptables-restore refuses.

// clusterIPv4 is svc's IPv4 cluster IP (of spec.clusterIPs, a dual-stack Service's may be
// second), "None" for a headless Service, or "" when it has none (kube-proxy's
// GetClusterIPByFamily).
func clusterIPv4(svc *corev1.Service) string {
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return corev1.ClusterIPNone
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, ip := range ips {
		if isIPv4(ip) {
			return ip
		}
	}
	return ""
}

// ipv4s are the IPv4 addresses of ips (ips itself when all are).
func ipv4s(ips []string) []string {
	if !slices.ContainsFunc(ips, func(ip string) bool { return !isIPv4(ip) }) {
		return ips
	}
	var out []string
	for _, ip := range ips {
		if isIPv4(ip) {
			out = append(out, ip)
		}
	}
	return out
}

func isIPv4(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && a.Is4()
}

// SliceRecordOf is s's record.
func SliceRecordOf(s *discoveryv1.EndpointSlice) *SliceRecord {
	r := &SliceRecord{Namespace: intern(s.Namespace), Name: s.Name, ResourceVersion: s.ResourceVersion,
		Service: s.Labels[discoveryv1.LabelServiceName], AddressType: canonical(s.AddressType, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN)}
	for _, p := range s.Ports {
		// A port without a number means "all ports": nothing a proxy can send to, nor
		// is one out of range (the API server takes any number, as kube's). Port names
		// are unique within a slice, so dropping it loses no other match.
		if p.Port != nil && *p.Port > 0 && *p.Port <= 65535 {
			r.Ports = append(r.Ports, SliceRecordPort{Name: ptr.Deref(p.Name, ""), Protocol: orTCP(ptr.Deref(p.Protocol, "")), Port: *p.Port})
		}
	}
	if len(s.Endpoints) > 0 {
		r.Endpoints = make([]SliceRecordEndpoint, len(s.Endpoints))
		for i, ep := range s.Endpoints {
			// Unset conditions as kube-proxy reads them: ready and serving true, terminating false.
			e := SliceRecordEndpoint{NodeName: intern(ptr.Deref(ep.NodeName, "")), Ready: ptr.Deref(ep.Conditions.Ready, true),
				Serving: ptr.Deref(ep.Conditions.Serving, true), Terminating: ptr.Deref(ep.Conditions.Terminating, false)}
			if len(ep.Addresses) > 0 {
				e.IP = ep.Addresses[0]
			}
			e.Hints = hintsOf(ep.Hints)
			r.Endpoints[i] = e
		}
	}
	own := []*string{&r.Name, &r.ResourceVersion, &r.Service}
	for i := range r.Ports {
		own = append(own, &r.Ports[i].Name)
	}
	for i := range r.Endpoints {
		own = append(own, &r.Endpoints[i].IP)
	}
	pack(own)
	return r
}

// A record's strings are its own, not the decoder's: each string the decoder made is an
// allocation of its own beside the decoded object's others, and one kept pins memory the
// rest of the object, garbage at once, shared with it (at 10 000 Services, the heap's
// spans held a third more than its live objects). Strings many records repeat
// (namespaces, node names, the API's enum values) are shared; a record's others are
// copied into one allocation of its own.

// hintsOf is h's record, its names shared (zones and nodes repeat across endpoints).
func hintsOf(h *discoveryv1.EndpointHints) *EndpointHints {
	if h == nil || len(h.ForZones)+len(h.ForNodes) == 0 {
		return nil
	}
	out := &EndpointHints{}
	for _, z := range h.ForZones {
		out.Zones = append(out.Zones, intern(z.Name))
	}
	for _, n := range h.ForNodes {
		out.Nodes = append(out.Nodes, intern(n.Name))
	}
	return out
}

// pack points the strings ss point to at copies of them in one allocation.
func pack(ss []*string) {
	n := 0
	for _, s := range ss {
		n += len(*s)
	}
	if n == 0 {
		return
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range ss {
		b.WriteString(*s)
	}
	all := b.String()
	for _, s := range ss {
		*s, all = all[:len(*s)], all[len(*s):]
	}
}

// intern is s, shared with the other records holding the same string: unique's copy, which
// it forgets at a collection (no handle is kept), so records made after share a new one.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// canonical is v as the one of known it equals, whose string is the program's constant, or
// else interned.
func canonical[T ~string](v T, known ...T) T {
	if i := slices.Index(known, v); i >= 0 {
		return known[i]
	}
	return T(intern(string(v)))
}

func orTCP(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return canonical(p, corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)
}
