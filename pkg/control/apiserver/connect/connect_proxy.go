package connect

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
)

var (
	servicesGVR       = corev1.SchemeGroupVersion.WithResource("services")
	endpointSlicesGVR = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
	endpointsGVR      = corev1.SchemeGroupVersion.WithResource("endpoints")
)

// podTransport reaches pods (pods/proxy, services/proxy), and nodes at a port other than
// their API's (nodes/proxy), from miniapi's own network, as kube-apiserver's proxy
// transport does: https without verifying the target's certificate, and never through an
// HTTP proxy from the environment (pod IPs are reached directly).
var podTransport = utilnet.SetTransportDefaults(&http.Transport{
	Proxy:           func(*http.Request) (*url.URL, error) { return nil, nil },
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
})

// proxyToPodOrService serves pods/ID/proxy/PATH and services/ID/proxy/PATH as
// kube-apiserver's ProxyREST: ID is NAME, NAME:PORT or SCHEME:NAME:PORT, PATH and the query
// go to the pod (or a ready endpoint of the service), as proxyToLocation sends them.
func (h *Handler) proxyToPodOrService(w http.ResponseWriter, r *http.Request, ri *request.RequestInfo) {
	var loc *url.URL
	var err error
	if ri.Resource == "pods" {
		loc, err = h.podLocation(r.Context(), ri.Namespace, ri.Name)
	} else {
		loc, err = h.serviceLocation(r.Context(), ri.Namespace, ri.Name)
	}
	if err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	proxyToLocation(w, r, loc, ri)
}

// proxyToLocation sends the request for .../proxy/PATH to PATH at loc through kube-apiserver's
// proxy transport (podTransport), any method, upgrades included, rewriting links in HTML
// answers to stay under the proxy path.
func proxyToLocation(w http.ResponseWriter, r *http.Request, loc *url.URL, ri *request.RequestInfo) {
	loc.Path = utilnet.JoinPreservingTrailingSlash(loc.Path, proxySubpath(ri))
	r.Header.Del("Authorization") // the user's credentials are for miniapi, not for the target
	handler := proxy.NewUpgradeAwareHandler(loc, podTransport, true, false, restResponder{})
	handler.ServeHTTP(w, r)
}

// proxySubpath is the path after .../proxy, with a leading slash and the request's
// trailing one (kube-apiserver's connect "path" option).
func proxySubpath(ri *request.RequestInfo) string {
	p := strings.Join(ri.Parts[3:], "/")
	if p != "" {
		p = "/" + p
	}
	if strings.HasSuffix(ri.Path, "/") && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// podLocation is the pod's IP and the port id names, or its first container port (kube's
// pod ResourceLocation).
func (h *Handler) podLocation(ctx context.Context, ns, id string) (*url.URL, error) {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", id))
	}
	pods, _ := h.Registry.Lookup(podsGVR)
	obj, err := h.Objects.Get(ctx, pods, ns, name)
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q: the port of a pod is a number", id))
	}
	ip := pod.Status.PodIP
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	if ip == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s has no IP address yet (phase %s)", name, pod.Status.Phase))
	}
	if addr := net.ParseIP(ip); addr == nil || !addr.IsGlobalUnicast() {
		return nil, apierrors.NewBadRequest("address not allowed")
	}
	host := ip
	if port != "" {
		host = net.JoinHostPort(ip, port)
	} else if strings.Contains(ip, ":") {
		host = "[" + ip + "]"
	}
	return &url.URL{Scheme: scheme, Host: host}, nil
}

// serviceLocation is a random ready endpoint of the service's EndpointSlices for the port
// id names (by number, by name, or the unnamed one), as kube's service ResourceLocation;
// only endpoints that are the pods they name count. Its refusals are kube's, which reads
// the Service's Endpoints: none is their NotFound (ExternalName, no selector), none with
// an address names the service, none ready for the port names id as written.
func (h *Handler) serviceLocation(ctx context.Context, ns, id string) (*url.URL, error) {
	scheme, name, portName, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
	}
	services, _ := h.Registry.Lookup(servicesGVR)
	obj, err := h.Objects.Get(ctx, services, ns, name)
	if err != nil {
		return nil, err
	}
	if number, err := strconv.ParseInt(portName, 10, 32); err == nil {
		found := false
		for _, p := range obj.(*corev1.Service).Spec.Ports {
			if int64(p.Port) == number {
				portName, found = p.Name, true
				break
			}
		}
		if !found {
			return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", number, name))
		}
	}
	endpoints, _ := h.Registry.Lookup(endpointsGVR)
	epObj, err := h.Objects.Get(ctx, endpoints, ns, name)
	if err != nil {
		return nil, err
	}
	if len(epObj.(*corev1.Endpoints).Subsets) == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	var candidates []string
	serviceSlices, err := h.endpointSlices(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	for _, slice := range serviceSlices {
		if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		for _, p := range slice.Ports {
			if p.Port == nil || (p.Name == nil && portName != "") || (p.Name != nil && *p.Name != portName) {
				continue
			}
			for _, ep := range slice.Endpoints {
				if (ep.Conditions.Ready == nil || *ep.Conditions.Ready) && len(ep.Addresses) > 0 && h.isPodAddress(ctx, ns, ep) {
					candidates = append(candidates, net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*p.Port))))
				}
			}
		}
	}
	if len(candidates) == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", id))
	}
	return &url.URL{Scheme: scheme, Host: candidates[rand.IntN(len(candidates))]}, nil
}

// endpointSlices are the service's slices (label kubernetes.io/service-name).
func (h *Handler) endpointSlices(ctx context.Context, ns, service string) ([]*discoveryv1.EndpointSlice, error) {
	res, _ := h.Registry.Lookup(endpointSlicesGVR)
	kvs, _, err := h.Store.List(ctx, generic.ListPrefix(res, ns))
	if err != nil {
		return nil, err
	}
	var out []*discoveryv1.EndpointSlice
	for _, kv := range kvs {
		obj, err := generic.Decode(res, kv.Value, kv.Revision)
		if err != nil {
			return nil, err
		}
		if slice := obj.(*discoveryv1.EndpointSlice); slice.Labels[discoveryv1.LabelServiceName] == service {
			out = append(out, slice)
		}
	}
	return out, nil
}

// isPodAddress tells whether the endpoint is a pod of the namespace that has its address:
// kube-apiserver proxies only to pods, not to any address an EndpointSlice's writer names.
func (h *Handler) isPodAddress(ctx context.Context, ns string, ep discoveryv1.Endpoint) bool {
	if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || ep.TargetRef.Namespace != ns {
		return false
	}
	pods, _ := h.Registry.Lookup(podsGVR)
	obj, err := h.Objects.Get(ctx, pods, ns, ep.TargetRef.Name)
	if err != nil {
		return false
	}
	for _, ip := range obj.(*corev1.Pod).Status.PodIPs {
		if ip.IP == ep.Addresses[0] {
			return true
		}
	}
	return false
}
