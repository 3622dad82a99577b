package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The `kubernetes` Service's endpoints with several API servers: kube-apiserver's lease
// endpoint reconciler. Each server keeps a lease under /masterleases/<ip>, renewed every
// interval and live for ttl after its renewal; each writes the Endpoints and EndpointSlice
// of every live lease. A server that stops gracefully removes its lease and its address at
// once; one that dies drops out when its lease has expired (at most ttl + interval later).
// kube-apiserver's leases are etcd leases with a TTL; the store has none, so the expiry is
// in the value and the reconcilers delete expired leases (compare-and-swap, so a renewal
// racing the deletion wins).
const (
	masterLeasePrefix = "/masterleases/"
	// DefaultEndpointReconcileInterval and DefaultMasterLeaseTTL are kube-apiserver's.
	DefaultEndpointReconcileInterval = 10 * time.Second
	DefaultMasterLeaseTTL            = 15 * time.Second
)

// masterLease is the value of one server's lease.
type masterLease struct {
	RenewTime  time.Time `json:"renewTime"`
	TTLSeconds float64   `json:"ttlSeconds"`
}

func (l masterLease) live(now time.Time) bool {
	return now.Before(l.RenewTime.Add(time.Duration(l.TTLSeconds * float64(time.Second))))
}

// RunEndpointReconciler keeps this server's lease and the `kubernetes` Service's endpoints
// until ctx ends, then removes its lease and its address. It returns at once when the
// server has no address pods can reach (Bootstrap said so). It renews every 10 s, or
// every two thirds of a shorter TTL, as kube-apiserver renews its 15 s lease every 10 s.
func (s *Server) RunEndpointReconciler(ctx context.Context) {
	interval := min(DefaultEndpointReconcileInterval, s.leaseTTL*2/3)
	if !s.advertisable() {
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if err := s.reconcileEndpoints(ctx, false); err != nil && ctx.Err() == nil {
			s.log.Warn("the kubernetes Service's endpoints", "err", err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := s.reconcileEndpoints(stop, true); err != nil {
				s.log.Warn("removing this API server from the kubernetes Service's endpoints", "err", err)
			}
			return
		}
	}
}

func (s *Server) advertisable() bool {
	ip := s.advertise.Addr()
	return ip.IsValid() && !ip.IsLoopback() && !ip.IsUnspecified()
}

// reconcileEndpoints renews (or, when leaving, deletes) this server's lease, deletes
// expired ones and writes the endpoints of the live ones.
func (s *Server) reconcileEndpoints(ctx context.Context, leaving bool) error {
	own := masterLeasePrefix + s.advertise.Addr().String()
	if err := s.renewLease(ctx, own, leaving); err != nil {
		return err
	}
	leases, _, err := s.store.List(ctx, masterLeasePrefix)
	if err != nil {
		return err
	}
	now := time.Now()
	var ips []netip.Addr
	for _, kv := range leases {
		var l masterLease
		ip, perr := netip.ParseAddr(strings.TrimPrefix(kv.Key, masterLeasePrefix))
		if json.Unmarshal(kv.Value, &l) != nil || perr != nil || !l.live(now) {
			if _, _, err := s.store.Delete(ctx, kv.Key, kv.Revision); err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			continue
		}
		if !(leaving && kv.Key == own) {
			ips = append(ips, ip)
		}
	}
	if len(ips) == 0 { // as kube-apiserver: never erase every endpoint of the Service
		return nil
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	return s.writeKubernetesEndpoints(ctx, ips)
}

func (s *Server) renewLease(ctx context.Context, key string, leaving bool) error {
	cur, err := s.store.Get(ctx, key)
	if leaving {
		if err == nil {
			_, _, err = s.store.Delete(ctx, key, cur.Revision)
		}
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
			return nil
		}
		return err
	}
	value, merr := json.Marshal(masterLease{RenewTime: time.Now(), TTLSeconds: s.leaseTTL.Seconds()})
	if merr != nil {
		return merr
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		_, err = s.store.Create(ctx, key, value)
	case err == nil:
		_, err = s.store.Update(ctx, key, value, cur.Revision)
	}
	return err
}

// current is the `kubernetes` object of gvr as stored, nil when missing.
func (s *Server) current(ctx context.Context, gvr schema.GroupVersionResource) runtime.Object {
	res, ok := s.reg.Lookup(gvr)
	if !ok {
		return nil
	}
	obj, err := s.objects.Get(ctx, res, metav1.NamespaceDefault, kubernetesService)
	if err != nil {
		return nil
	}
	return obj
}

// writeKubernetesEndpoints makes the Endpoints and EndpointSlice of the `kubernetes`
// Service list ips on this server's secure port (all API servers serve on the same one, as
// kube-apiserver assumes). What is stored already is not written again: every renewal of
// every server would otherwise send all watchers of endpoints an event.
func (s *Server) writeKubernetesEndpoints(ctx context.Context, ips []netip.Addr) error {
	port := int32(s.advertise.Port())
	const portName = "https"
	var addrs []corev1.EndpointAddress
	var endpoints []discoveryv1.Endpoint
	ready, family := true, discoveryv1.AddressTypeIPv4
	if s.advertise.Addr().Is6() {
		family = discoveryv1.AddressTypeIPv6
	}
	for _, ip := range ips {
		if ip.Is6() != (family == discoveryv1.AddressTypeIPv6) {
			continue
		}
		addrs = append(addrs, corev1.EndpointAddress{IP: ip.String()})
		endpoints = append(endpoints, discoveryv1.Endpoint{Addresses: []string{ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses: addrs,
			Ports:     []corev1.EndpointPort{{Name: portName, Port: port, Protocol: corev1.ProtocolTCP}},
		}},
	}
	if cur, ok := s.current(ctx, corev1.SchemeGroupVersion.WithResource("endpoints")).(*corev1.Endpoints); !ok || !apiequality.Semantic.DeepEqual(cur.Subsets, ep.Subsets) {
		if err := s.ensure(ctx, corev1.SchemeGroupVersion.WithResource("endpoints"), ep, func(cur runtime.Object) {
			cur.(*corev1.Endpoints).Subsets = ep.Subsets
		}); err != nil {
			return err
		}
	}
	name, protocol := portName, corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: kubernetesService}},
		AddressType: family,
		Endpoints:   endpoints,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &protocol}},
	}
	gvr := discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
	if cur, ok := s.current(ctx, gvr).(*discoveryv1.EndpointSlice); ok && cur.AddressType == slice.AddressType &&
		apiequality.Semantic.DeepEqual(cur.Endpoints, slice.Endpoints) && apiequality.Semantic.DeepEqual(cur.Ports, slice.Ports) {
		return nil
	}
	err := s.ensure(ctx, gvr, slice, func(cur runtime.Object) {
		c := cur.(*discoveryv1.EndpointSlice)
		c.Endpoints, c.Ports = slice.Endpoints, slice.Ports
	})
	if apierrors.IsInvalid(err) { // the address family changed: addressType is immutable
		res, _ := s.reg.Lookup(gvr)
		if _, _, err = s.objects.Delete(ctx, res, slice.Namespace, slice.Name, metav1.DeleteOptions{}); err == nil {
			err = s.ensure(ctx, gvr, slice, nil)
		}
	}
	return err
}
