// Package proxy turns Services and EndpointSlices into what a node's kernel needs to
// deliver Service traffic: a snapshot of every service port with the endpoints it may use
// (this file), which a proxier (pkg/proxy/iptables) writes as rules.
package proxy

import (
	"fmt"
	"net"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/utils/ptr"
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
	// AffinitySeconds > 0 pins a client IP to one endpoint that long (ClientIP affinity).
	AffinitySeconds int32
	ExternalLocal   bool // externalTrafficPolicy: Local
	InternalLocal   bool // internalTrafficPolicy: Local
	Endpoints       []Endpoint
}

// Endpoint is one address:port a service port may send to.
type Endpoint struct {
	IP          string
	Port        int32
	Ready       bool
	Serving     bool
	Terminating bool
	Local       bool // on this node
}

func (e Endpoint) String() string { return net.JoinHostPort(e.IP, fmt.Sprint(e.Port)) }

// Usable are the endpoints traffic goes to: the ready ones, or when none is ready, the
// serving ones that are terminating (so connections drain instead of failing), as
// kube-proxy does. local keeps only this node's.
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
	if ready := pick(func(e Endpoint) bool { return e.Ready }); len(ready) > 0 {
		return ready
	}
	return pick(func(e Endpoint) bool { return e.Serving && e.Terminating })
}

// Snapshot reads every Service with a cluster IP and its EndpointSlices into service ports,
// sorted by name. nodeName says which endpoints are local.
func Snapshot(services corelisters.ServiceLister, slices discoverylisters.EndpointSliceLister, nodeName string) ([]ServicePort, error) {
	svcs, err := services.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	// One pass over the slices, grouped by their Service: a label-selected List per Service
	// would make the snapshot quadratic (half a minute at 10 000 Services).
	all, err := slices.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	byService := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range all {
		if name, ok := s.Labels[discoveryv1.LabelServiceName]; ok {
			byService[s.Namespace+"/"+name] = append(byService[s.Namespace+"/"+name], s)
		}
	}
	var out []ServicePort
	for _, svc := range svcs {
		if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == "" {
			continue
		}
		list := byService[svc.Namespace+"/"+svc.Name]
		for i := range svc.Spec.Ports {
			out = append(out, servicePort(svc, &svc.Spec.Ports[i], list, nodeName))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Protocol < out[j].Protocol
	})
	return out, nil
}

func servicePort(svc *corev1.Service, p *corev1.ServicePort, slices []*discoveryv1.EndpointSlice, nodeName string) ServicePort {
	name := svc.Namespace + "/" + svc.Name
	if p.Name != "" {
		name += ":" + p.Name
	}
	sp := ServicePort{
		Name: name, Protocol: p.Protocol, ClusterIP: svc.Spec.ClusterIP, Port: p.Port, NodePort: p.NodePort,
		ExternalIPs:   svc.Spec.ExternalIPs,
		ExternalLocal: svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && externallyReachable(svc),
		InternalLocal: ptr.Deref(svc.Spec.InternalTrafficPolicy, corev1.ServiceInternalTrafficPolicyCluster) == corev1.ServiceInternalTrafficPolicyLocal,
	}
	if sp.Protocol == "" {
		sp.Protocol = corev1.ProtocolTCP
	}
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		sp.AffinitySeconds = corev1.DefaultClientIPServiceAffinitySeconds
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			sp.AffinitySeconds = *c.ClientIP.TimeoutSeconds
		}
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if ing.IP != "" {
				sp.LoadBalancerIPs = append(sp.LoadBalancerIPs, ing.IP)
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range slices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		var port *int32
		for _, ep := range s.Ports {
			if ptr.Deref(ep.Name, "") == p.Name && ptr.Deref(ep.Protocol, corev1.ProtocolTCP) == sp.Protocol {
				port = ep.Port
			}
		}
		if port == nil {
			continue
		}
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			e := Endpoint{IP: ep.Addresses[0], Port: *port,
				Ready:       ptr.Deref(ep.Conditions.Ready, true),
				Serving:     ptr.Deref(ep.Conditions.Serving, ptr.Deref(ep.Conditions.Ready, true)),
				Terminating: ptr.Deref(ep.Conditions.Terminating, false),
				Local:       ptr.Deref(ep.NodeName, "") == nodeName && nodeName != ""}
			if !seen[e.String()] { // the same endpoint in two slices (mid-update) counts once
				seen[e.String()] = true
				sp.Endpoints = append(sp.Endpoints, e)
			}
		}
	}
	sort.Slice(sp.Endpoints, func(i, j int) bool { return sp.Endpoints[i].String() < sp.Endpoints[j].String() })
	return sp
}

// externallyReachable: NodePort and LoadBalancer Services, or any with external IPs, are
// what externalTrafficPolicy applies to.
func externallyReachable(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer || len(svc.Spec.ExternalIPs) > 0
}
