// Package endpointslice keeps the EndpointSlices of every Service with a selector: one
// endpoint per selected pod with an IP, its ready/serving/terminating conditions, node and
// zone, grouped by the ports it resolves to and at most 100 to a slice, and the topology
// hints trafficDistribution or the topology-mode annotation ask for (hints.go), as
// kube-controller-manager's endpointslice controller. miniproxy and CoreDNS read them.
package endpointslice

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/minik8s/minik8s/internal/controller/servicepods"
	"github.com/minik8s/minik8s/internal/controller/serviceslices"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	registrycore "github.com/minik8s/minik8s/pkg/control/registry/core"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/endpointslice/topologycache"
	endpointsliceutil "k8s.io/endpointslice/util"
	"k8s.io/utils/ptr"
)

const (
	// Name is the source of its Events, as kube-controller-manager's.
	Name = "endpoint-slice-controller"
	// maxEndpoints per slice (--max-endpoints-per-slice).
	maxEndpoints = 100
)

// Controller is the endpointslice controller.
type Controller struct {
	*serviceslices.Base
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	recorder record.EventRecorder
	// topology is the CPU of each zone and the hints given by it, for topology-mode Auto.
	topology *topologycache.TopologyCache
	// triggerTimes gives the time of the change a slice write follows from, for its
	// last-change-trigger-time annotation.
	triggerTimes *endpointsliceutil.TriggerTimeTracker
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, services coreinformers.ServiceInformer, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer,
	slices discoveryinformers.EndpointSliceInformer, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		Base: serviceslices.New("endpoint_slice", registrycore.EndpointSliceControllerName, client, services, slices, log, pods.Informer(), nodes.Informer()),
		pods: pods.Lister(), nodes: nodes.Lister(), recorder: recorder, topology: topologycache.NewTopologyCache(),
		triggerTimes: endpointsliceutil.NewTriggerTimeTracker(),
	}
	w := &servicepods.Watcher{Services: c.Services, Queue: c.Queue}
	if err := w.Register(services.Informer(), pods.Informer()); err != nil {
		return nil, err
	}
	onNode := func(any) { c.Queue.Add(topologyKey) }
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onNode, UpdateFunc: c.onNodeUpdate, DeleteFunc: onNode}); err != nil {
		return nil, err
	}
	return c, c.WatchSlices(slices.Informer())
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.Work(ctx, c.sync)
}

// group is the endpoints that resolve a Service's ports to the same pod ports.
type group struct {
	ports     []discoveryv1.EndpointPort
	endpoints []discoveryv1.Endpoint
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	if key == topologyKey {
		c.checkNodeTopology()
		return 0, nil
	}
	svc, found, err := workloop.Lookup(key, c.Services.Services)
	if !found {
		if err == nil { // deleted: what was known of it goes too
			ns, name, _ := cache.SplitMetaNamespaceKey(key)
			c.triggerTimes.DeleteService(ns, name)
			c.Forget(ns, name)
		}
		return 0, err // its slices go with it: the Service owns them
	}
	existing, err := c.Existing(svc.Namespace, svc.Name)
	if err != nil {
		return 0, err
	}
	if !servicepods.Managed(svc) {
		c.Forget(svc.Namespace, svc.Name)
		return 0, c.DeleteSlices(ctx, existing)
	}
	if err := c.CheckCache(ctx, svc, existing); err != nil {
		return 0, err
	}
	pods, err := servicepods.Selected(c.pods, svc)
	if err != nil {
		return 0, err
	}
	// Computed on every sync, written or not, so that the next write names only what
	// changed since this one (as kube's endpointslice controller).
	triggerTime := c.triggerTimes.ComputeEndpointLastChangeTriggerTime(svc.Namespace, svc, pods)
	return 0, c.reconcile(ctx, svc, c.desired(svc, pods), existing, triggerTime)
}

// desired groups the endpoints of svc's pods by resolved ports, each group sorted.
func (c *Controller) desired(svc *corev1.Service, pods []*corev1.Pod) []group {
	byPorts := map[string]*group{}
	for _, pod := range pods {
		var ports []discoveryv1.EndpointPort
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			port, err := servicepods.TargetPort(pod, sp)
			if err != nil {
				c.Log.Debug("service port not found on pod", "service", svc.Namespace+"/"+svc.Name, "err", err)
				continue
			}
			ports = append(ports, discoveryv1.EndpointPort{Name: &sp.Name, Port: &port, Protocol: &sp.Protocol, AppProtocol: sp.AppProtocol})
		}
		k := portsKey(ports)
		g := byPorts[k]
		if g == nil {
			servicepods.SortByHash(ports) // kube's order of a slice's ports
			g = &group{ports: ports}
			byPorts[k] = g
		}
		g.endpoints = append(g.endpoints, c.endpoint(svc, pod))
	}
	keys := slices.Sorted(maps.Keys(byPorts))
	groups := make([]group, 0, len(keys))
	for _, k := range keys {
		g := byPorts[k]
		sort.Slice(g.endpoints, func(i, j int) bool { return g.endpoints[i].Addresses[0] < g.endpoints[j].Addresses[0] })
		groups = append(groups, *g)
	}
	return groups
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = fmt.Sprintf("%s/%s/%d", ptr.Deref(p.Name, ""), ptr.Deref(p.Protocol, ""), ptr.Deref(p.Port, 0))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (c *Controller) endpoint(svc *corev1.Service, pod *corev1.Pod) discoveryv1.Endpoint {
	ready, serving, terminating := servicepods.Conditions(svc, pod)
	ep := discoveryv1.Endpoint{
		Addresses:  []string{pod.Status.PodIP},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		ep.NodeName = &pod.Spec.NodeName
		if node, err := c.nodes.Get(pod.Spec.NodeName); err == nil {
			if zone, ok := node.Labels[corev1.LabelTopologyZone]; ok {
				ep.Zone = &zone
			}
		}
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
		ep.Hostname = &pod.Spec.Hostname
	}
	return ep
}

// reconcile makes the stored slices hold the groups: slices of a group's ports are reused
// in order and rewritten only when their content or hints differ; what is left over goes.
// A Service with no endpoints keeps one empty slice, as Kubernetes does.
func (c *Controller) reconcile(ctx context.Context, svc *corev1.Service, groups []group, existing []*discoveryv1.EndpointSlice, triggerTime time.Time) error {
	if len(groups) == 0 {
		groups = []group{{}}
	}
	byPorts := map[string][]*discoveryv1.EndpointSlice{}
	sort.Slice(existing, func(i, j int) bool { return existing[i].Name < existing[j].Name })
	for _, s := range existing {
		k := portsKey(s.Ports)
		byPorts[k] = append(byPorts[k], s)
	}
	si := &topologycache.SliceInfo{ServiceKey: svc.Namespace + "/" + svc.Name, AddressType: discoveryv1.AddressTypeIPv4}
	for _, g := range groups {
		k := portsKey(g.ports)
		for start := 0; start == 0 || start < len(g.endpoints); start += maxEndpoints {
			chunk := g.endpoints[start:min(start+maxEndpoints, len(g.endpoints))]
			want := newSlice(svc, g.ports, chunk)
			list := byPorts[k]
			if len(list) == 0 {
				si.ToCreate = append(si.ToCreate, want)
				continue
			}
			cur := list[0]
			byPorts[k] = list[1:]
			if sameContent(cur, want) {
				si.Unchanged = append(si.Unchanged, cur)
				c.Written(cur)
				continue
			}
			updated := cur.DeepCopy()
			updated.Labels, updated.Ports, updated.Endpoints = want.Labels, want.Ports, want.Endpoints
			si.ToUpdate = append(si.ToUpdate, updated)
		}
	}
	create, update, events := c.hints(svc, si)
	var leftover []*discoveryv1.EndpointSlice
	for _, k := range slices.Sorted(maps.Keys(byPorts)) {
		leftover = append(leftover, byPorts[k]...)
	}
	create, update, leftover = recycle(create, update, leftover)
	for _, s := range slices.Concat(create, update) { // the time of the change behind the write
		servicepods.SetTriggerTime(&s.ObjectMeta, triggerTime)
	}
	err := c.Write(ctx, svc, "Service", create, update, leftover)
	for _, e := range events {
		c.recorder.Event(svc, e.EventType, e.Reason, e.Message)
	}
	return err
}

// recycle turns a slice to create and one to delete into an update of the second, so a
// Service whose ports change keeps its slice's name, as kube's reconciler does.
func recycle(create, update, leftover []*discoveryv1.EndpointSlice) (_, _, _ []*discoveryv1.EndpointSlice) {
	for len(create) > 0 && len(leftover) > 0 {
		s, old := create[len(create)-1], leftover[0]
		s.Name, s.ResourceVersion = old.Name, old.ResourceVersion
		create, leftover = create[:len(create)-1], leftover[1:]
		update = append(update, s)
	}
	return create, update, leftover
}

func newSlice(svc *corev1.Service, ports []discoveryv1.EndpointPort, endpoints []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    svc.Name + "-",
			Namespace:       svc.Namespace,
			Labels:          sliceLabels(svc),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       ports,
		Endpoints:   endpoints,
	}
}

// sameContent: cur holds want's labels, ports and endpoints, hints aside (hints decide
// on their own whether cur is rewritten).
func sameContent(cur, want *discoveryv1.EndpointSlice) bool {
	if !equality.Semantic.DeepEqual(cur.Ports, want.Ports) || !equality.Semantic.DeepEqual(cur.Labels, want.Labels) ||
		len(cur.Endpoints) != len(want.Endpoints) {
		return false
	}
	for i := range cur.Endpoints {
		a, b := cur.Endpoints[i], want.Endpoints[i]
		a.Hints, b.Hints = nil, nil
		if !equality.Semantic.DeepEqual(a, b) {
			return false
		}
	}
	return true
}

// sliceLabels are the Service's labels but the reserved ones, the two that tie a slice to
// it and to us, and service.kubernetes.io/headless for a Service without a cluster IP, as
// kube's reconciler (k8s.io/endpointslice setEndpointSliceLabels).
func sliceLabels(svc *corev1.Service) map[string]string {
	out := map[string]string{}
	for k, v := range svc.Labels {
		if k != discoveryv1.LabelServiceName && k != discoveryv1.LabelManagedBy && k != corev1.IsHeadlessService {
			out[k] = v
		}
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == "" {
		out[corev1.IsHeadlessService] = ""
	}
	out[discoveryv1.LabelServiceName] = svc.Name
	out[discoveryv1.LabelManagedBy] = registrycore.EndpointSliceControllerName
	return out
}
