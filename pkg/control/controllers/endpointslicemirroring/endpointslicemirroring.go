// Package endpointslicemirroring mirrors the Endpoints of a Service without a selector into
// EndpointSlices, as kube-controller-manager's endpointslicemirroring controller: custom
// Endpoints written by hand or by an operator reach miniproxy and CoreDNS, which read slices.
// Endpoints labelled endpointslice.kubernetes.io/skip-mirror=true (the `kubernetes`
// Service's, whose slice is written beside them) and those of a Service with a selector
// (the endpoint controller's) are left alone.
package endpointslicemirroring

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/minik8s/minik8s/internal/controller/serviceslices"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	registrycore "github.com/minik8s/minik8s/pkg/control/registry/core"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	endpointsliceutil "k8s.io/endpointslice/util"
	netutils "k8s.io/utils/net"
)

const (
	// Name is the controller's event source, as kube-controller-manager's.
	Name = "endpoint-slice-mirroring-controller"
	// MaxEndpointsPerSubset is how many addresses of one subset are mirrored
	// (--mirroring-max-endpoints-per-subset); the rest are skipped with an event.
	MaxEndpointsPerSubset = 1000
)

// Controller is the endpointslicemirroring controller.
type Controller struct {
	*serviceslices.Base
	endpoints corelisters.EndpointsLister
	recorder  record.EventRecorder
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, endpoints coreinformers.EndpointsInformer, services coreinformers.ServiceInformer,
	slices discoveryinformers.EndpointSliceInformer, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		Base:      serviceslices.New("endpoint_slice_mirroring", registrycore.EndpointSliceMirroringControllerName, client, services, slices, log, endpoints.Informer()),
		endpoints: endpoints.Lister(),
		recorder:  recorder,
	}
	enqueue := workloop.Enqueue(c.Queue)
	// Endpoints: only those that are (or were) to be mirrored; the endpoint controller's
	// change with every pod and are none of this controller's business.
	_, err := endpoints.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if shouldMirror(obj.(*corev1.Endpoints)) {
				enqueue(obj)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			if shouldMirror(oldObj.(*corev1.Endpoints)) || shouldMirror(newObj.(*corev1.Endpoints)) {
				enqueue(newObj)
			}
		},
		DeleteFunc: func(obj any) {
			if ep, ok := workloop.Object[*corev1.Endpoints](obj); ok && shouldMirror(ep) {
				enqueue(obj)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	// Services: one without a selector appearing or going, or a selector added or removed.
	onService := func(obj any) {
		if svc, ok := workloop.Object[*corev1.Service](obj); ok && svc.Spec.Selector == nil {
			enqueue(obj)
		}
	}
	_, err = services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onService,
		UpdateFunc: func(oldObj, newObj any) {
			if (oldObj.(*corev1.Service).Spec.Selector == nil) != (newObj.(*corev1.Service).Spec.Selector == nil) {
				enqueue(newObj)
			}
		},
		DeleteFunc: onService,
	})
	if err != nil {
		return nil, err
	}
	return c, c.WatchSlices(slices.Informer())
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.Work(ctx, c.sync)
}

// shouldMirror: not marked skip-mirror, and not a leader-election record.
func shouldMirror(ep *corev1.Endpoints) bool {
	_, leaderElection := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]
	return ep.Labels[discoveryv1.LabelSkipMirror] != "true" && !leaderElection
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	existing, err := c.Existing(ns, name)
	if err != nil {
		return 0, err
	}
	ep, err := c.endpoints.Endpoints(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	var svc *corev1.Service
	if err == nil && shouldMirror(ep) {
		if svc, err = c.Services.Services(ns).Get(name); err != nil && !apierrors.IsNotFound(err) {
			return 0, err
		}
	}
	// No Endpoints, not to be mirrored, no Service, or a Service with a selector (whose
	// slices the endpointslice controller writes): no mirrored slices.
	if svc == nil || svc.Spec.Selector != nil {
		c.Forget(ns, name)
		return 0, c.DeleteSlices(ctx, existing)
	}
	if err := c.CheckCache(ctx, svc, existing); err != nil {
		return 0, err
	}
	return 0, c.reconcile(ctx, ep, existing)
}

// group is what one slice holds: the endpoints of one address type behind one set of ports.
type group struct {
	addressType discoveryv1.AddressType
	ports       []discoveryv1.EndpointPort
	endpoints   endpointsliceutil.EndpointSet
}

func groupKey(addressType discoveryv1.AddressType, ports []discoveryv1.EndpointPort) string {
	return fmt.Sprintf("%s-%s", addressType, endpointsliceutil.NewPortMapKey(ports))
}

// desired groups ep's addresses by ports and address type: ready ones first, at most
// MaxEndpointsPerSubset of the subsets that share a set of ports. It reports the addresses
// skipped as no IP and as over the limit.
func desired(ep *corev1.Endpoints) (groups map[string]*group, invalid, skipped int) {
	groups = map[string]*group{}
	added := map[string]int{} // per set of ports, both address types
	for _, ss := range ep.Subsets {
		ports := make([]discoveryv1.EndpointPort, 0, len(ss.Ports))
		for _, p := range ss.Ports {
			ports = append(ports, discoveryv1.EndpointPort{Name: &p.Name, Port: &p.Port, Protocol: &p.Protocol, AppProtocol: p.AppProtocol})
		}
		portsKey := string(endpointsliceutil.NewPortMapKey(ports))
		add := func(addresses []corev1.EndpointAddress, ready bool) {
			for _, a := range addresses {
				if added[portsKey] >= MaxEndpointsPerSubset {
					skipped++
					continue
				}
				e, addressType := endpoint(a, ready)
				if e == nil {
					invalid++
					continue
				}
				k := groupKey(addressType, ports)
				g := groups[k]
				if g == nil {
					g = &group{addressType: addressType, ports: ports, endpoints: endpointsliceutil.EndpointSet{}}
					groups[k] = g
				}
				if !g.endpoints.Has(e) { // an address repeated (ready first) counts once
					g.endpoints.Insert(e)
					added[portsKey]++
				}
			}
		}
		add(ss.Addresses, true)
		add(ss.NotReadyAddresses, false)
	}
	return groups, invalid, skipped
}

// endpoint is an Endpoints address as a slice's endpoint; nil when it is not an IP.
func endpoint(a corev1.EndpointAddress, ready bool) (*discoveryv1.Endpoint, discoveryv1.AddressType) {
	ip := netutils.ParseIPSloppy(a.IP)
	if ip == nil {
		return nil, ""
	}
	addressType := discoveryv1.AddressTypeIPv4
	if ip.To4() == nil {
		addressType = discoveryv1.AddressTypeIPv6
	}
	e := &discoveryv1.Endpoint{
		Addresses:  []string{ip.String()}, // written back in canonical form
		Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		TargetRef:  a.TargetRef,
		NodeName:   a.NodeName,
	}
	if a.Hostname != "" {
		e.Hostname = &a.Hostname
	}
	return e, addressType
}

// reconcile makes the mirrored slices of ep one per group: a group's existing slice is
// rewritten only when it differs, a new group takes over a slice of a group that went (of
// the same address type) before one is created, and what is left over is deleted.
func (c *Controller) reconcile(ctx context.Context, ep *corev1.Endpoints, existing []*discoveryv1.EndpointSlice) error {
	groups, invalid, skipped := desired(ep)
	if invalid > 0 {
		c.recorder.Eventf(ep, corev1.EventTypeWarning, "InvalidIPAddress", "Skipped %d invalid IP addresses when mirroring to EndpointSlices", invalid)
	}
	if skipped > 0 {
		c.recorder.Eventf(ep, corev1.EventTypeWarning, "TooManyAddressesToMirror",
			"A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. %d addresses were skipped", MaxEndpointsPerSubset, skipped+invalid)
	}
	sort.Slice(existing, func(i, j int) bool { return existing[i].Name < existing[j].Name })
	byKey := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		k := groupKey(s.AddressType, s.Ports)
		byKey[k] = append(byKey[k], s)
	}
	keys := slices.Sorted(maps.Keys(groups))
	var toCreate, toUpdate []*discoveryv1.EndpointSlice
	for _, k := range keys {
		g := groups[k]
		want := newSlice(ep, g)
		cur := byKey[k]
		if len(cur) == 0 {
			toCreate = append(toCreate, want)
			continue
		}
		byKey[k] = cur[1:]
		if !upToDate(cur[0], want, g.endpoints) {
			want.Name, want.ResourceVersion = cur[0].Name, cur[0].ResourceVersion
			toUpdate = append(toUpdate, want)
		} else {
			c.Written(cur[0])
		}
	}
	var toDelete []*discoveryv1.EndpointSlice
	for _, list := range byKey {
		toDelete = append(toDelete, list...)
	}
	sort.Slice(toDelete, func(i, j int) bool { return toDelete[i].Name < toDelete[j].Name })
	// Recycle: a slice to delete becomes one to create, when their address types agree.
	kept := toCreate[:0]
	for _, s := range toCreate {
		if i := indexOfType(toDelete, s.AddressType); i >= 0 {
			s.Name, s.ResourceVersion = toDelete[i].Name, toDelete[i].ResourceVersion
			toDelete = append(toDelete[:i], toDelete[i+1:]...)
			toUpdate = append(toUpdate, s)
			continue
		}
		kept = append(kept, s)
	}
	return c.Write(ctx, ep, "Endpoints", kept, toUpdate, toDelete)
}

func indexOfType(slices []*discoveryv1.EndpointSlice, t discoveryv1.AddressType) int {
	for i, s := range slices {
		if s.AddressType == t {
			return i
		}
	}
	return -1
}

// newSlice is the slice mirroring g: the Endpoints' labels and annotations (but the
// trigger time and kubectl's last-applied configuration), owned by the Endpoints.
func newSlice(ep *corev1.Endpoints, g *group) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ep.Name + "-",
			Namespace:       ep.Namespace,
			Labels:          map[string]string{},
			Annotations:     map[string]string{},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ep, corev1.SchemeGroupVersion.WithKind("Endpoints"))},
		},
		AddressType: g.addressType,
		Ports:       g.ports,
		Endpoints:   make([]discoveryv1.Endpoint, 0, g.endpoints.Len()),
	}
	for k, v := range ep.Labels {
		s.Labels[k] = v
	}
	s.Labels[discoveryv1.LabelServiceName] = ep.Name
	s.Labels[discoveryv1.LabelManagedBy] = registrycore.EndpointSliceMirroringControllerName
	for k, v := range ep.Annotations {
		if k != corev1.EndpointsLastChangeTriggerTime && k != corev1.LastAppliedConfigAnnotation {
			s.Annotations[k] = v
		}
	}
	for _, e := range g.endpoints.UnsortedList() {
		s.Endpoints = append(s.Endpoints, *e)
	}
	sort.Slice(s.Endpoints, func(i, j int) bool { return s.Endpoints[i].Addresses[0] < s.Endpoints[j].Addresses[0] })
	return s
}

// upToDate: cur holds the same endpoints, labels and annotations as want and is owned by
// this Endpoints object (not a namesake deleted and created again).
func upToDate(cur, want *discoveryv1.EndpointSlice, endpoints endpointsliceutil.EndpointSet) bool {
	if len(cur.Endpoints) != endpoints.Len() {
		return false
	}
	for i := range cur.Endpoints {
		got := endpoints.Get(&cur.Endpoints[i])
		if got == nil || !endpointsliceutil.EndpointsEqualBeyondHash(got, &cur.Endpoints[i]) {
			return false
		}
	}
	return equality.Semantic.DeepEqual(cur.Labels, want.Labels) && equality.Semantic.DeepEqual(cur.Annotations, want.Annotations) &&
		equality.Semantic.DeepEqual(cur.OwnerReferences, want.OwnerReferences)
}
