// Package endpoints keeps the core/v1 Endpoints of every Service with a selector, as
// kube-controller-manager's endpoint controller: ready pods in addresses, the others in
// notReadyAddresses, one subset per set of addresses offering the same ports. Clients that predate
// EndpointSlices (and `kubectl get endpoints`) read them.
package endpoints

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/minik8s/minik8s/internal/controller/servicepods"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	registrycore "github.com/minik8s/minik8s/pkg/control/registry/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	endpointsliceutil "k8s.io/endpointslice/util"
	"k8s.io/utils/ptr"
)

// maxCapacity is the most addresses an Endpoints holds, as kube's: past it the controller
// keeps a share of each subset and marks the Endpoints over capacity ("truncated").
const maxCapacity = 1000

// Controller is the endpoint controller.
type Controller struct {
	client    kubernetes.Interface
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	log       *slog.Logger
	// triggerTimes gives the time of the change an Endpoints write follows from, for its
	// last-change-trigger-time annotation.
	triggerTimes *endpointsliceutil.TriggerTimeTracker
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, services coreinformers.ServiceInformer, pods coreinformers.PodInformer,
	endpoints coreinformers.EndpointsInformer, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		client: client, services: services.Lister(), pods: pods.Lister(), endpoints: endpoints.Lister(),
		synced: []cache.InformerSynced{services.Informer().HasSynced, pods.Informer().HasSynced, endpoints.Informer().HasSynced},
		queue:  workloop.NewQueue[string]("endpoint"),
		log:    log,

		triggerTimes: endpointsliceutil.NewTriggerTimeTracker(),
	}
	w := &servicepods.Watcher{Services: c.services, Queue: c.queue}
	if err := w.Register(services.Informer(), pods.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 5, c.queue, c.log, c.sync, c.synced...)
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	client := c.client.CoreV1().Endpoints(ns)
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.triggerTimes.DeleteService(ns, name)
		if _, err := c.endpoints.Endpoints(ns).Get(name); err == nil {
			if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return 0, err
			}
		}
		return 0, nil
	}
	if err != nil || !servicepods.Managed(svc) {
		return 0, err
	}
	pods, err := servicepods.Selected(c.pods, svc)
	if err != nil {
		return 0, err
	}
	// Computed on every sync, written or not, so that the next write names only what
	// changed since this one (as kube's endpoint controller).
	triggerTime := c.triggerTimes.ComputeEndpointLastChangeTriggerTime(ns, svc, pods)
	want := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{}},
		Subsets:    subsets(svc, pods),
	}
	truncated := truncate(want.Subsets)
	if truncated {
		want.Annotations = map[string]string{corev1.EndpointsOverCapacity: "truncated"}
	}
	servicepods.SetTriggerTime(&want.ObjectMeta, triggerTime)
	// As kube's: the Service's labels, headless or not, and ours. The mirroring controller
	// leaves them alone as their Service has a selector (no skip-mirror label, as kube).
	for k, v := range svc.Labels {
		want.Labels[k] = v
	}
	delete(want.Labels, corev1.IsHeadlessService)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == "" {
		want.Labels[corev1.IsHeadlessService] = ""
	}
	want.Labels[registrycore.EndpointsManagedByLabel] = registrycore.EndpointsControllerName
	cur, err := c.endpoints.Endpoints(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		_, err = client.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return 0, fmt.Errorf("endpoints %s exist already: the cache is behind, retrying", key)
		}
		return 0, err
	case err != nil:
		return 0, err
	case equality.Semantic.DeepEqual(cur.Subsets, want.Subsets) && equality.Semantic.DeepEqual(cur.Labels, want.Labels) &&
		cur.Annotations[corev1.EndpointsOverCapacity] == want.Annotations[corev1.EndpointsOverCapacity]:
		return 0, nil
	}
	updated := cur.DeepCopy()
	updated.Labels, updated.Subsets = want.Labels, want.Subsets
	if truncated {
		metav1.SetMetaDataAnnotation(&updated.ObjectMeta, corev1.EndpointsOverCapacity, "truncated")
	} else {
		delete(updated.Annotations, corev1.EndpointsOverCapacity)
	}
	servicepods.SetTriggerTime(&updated.ObjectMeta, triggerTime)
	_, err = client.Update(ctx, updated, metav1.UpdateOptions{})
	return 0, err
}

// subsets lays out the pods in kube's canonical form (RepackSubsets): one subset per set of
// addresses that offer the same ports, ready ones in addresses, the others (unless
// terminating) in notReadyAddresses (with publishNotReadyAddresses all are addresses);
// addresses sorted by IP, ports and subsets in the order of their hashes.
func subsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	type offer struct {
		port  *corev1.EndpointPort // nil: a headless Service without ports
		addrs map[types.UID]bool   // the pods offering it, to whether they are ready
	}
	offers := map[string]*offer{}
	addrs := map[types.UID]corev1.EndpointAddress{}
	add := func(key string, port *corev1.EndpointPort, pod *corev1.Pod, ready bool) {
		o := offers[key]
		if o == nil {
			o = &offer{port: port, addrs: map[types.UID]bool{}}
			offers[key] = o
		}
		o.addrs[pod.UID] = ready
	}
	for _, pod := range pods {
		ready, _, terminating := servicepods.Conditions(svc, pod)
		if terminating && !ready {
			continue
		}
		addr := corev1.EndpointAddress{IP: pod.Status.PodIP,
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
		if pod.Spec.NodeName != "" {
			addr.NodeName = &pod.Spec.NodeName
		}
		if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
			addr.Hostname = pod.Spec.Hostname
		}
		addrs[pod.UID] = addr
		if len(svc.Spec.Ports) == 0 {
			add("", nil, pod, ready)
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			port, err := servicepods.TargetPort(pod, sp)
			if err != nil {
				continue
			}
			ep := &corev1.EndpointPort{Name: sp.Name, Port: port, Protocol: sp.Protocol, AppProtocol: sp.AppProtocol}
			add(fmt.Sprintf("%s/%s/%d/%s", ep.Name, ep.Protocol, ep.Port, ptr.Deref(ep.AppProtocol, "")), ep, pod, ready)
		}
	}
	// The ports offered by the same addresses, alike ready, make one subset.
	bySet := map[string]*corev1.EndpointSubset{}
	for _, key := range slices.Sorted(maps.Keys(offers)) {
		o := offers[key]
		var set []string
		for uid, ready := range o.addrs {
			set = append(set, fmt.Sprintf("%s/%v", uid, ready))
		}
		slices.Sort(set)
		setKey := strings.Join(set, ",")
		ss := bySet[setKey]
		if ss == nil {
			ss = &corev1.EndpointSubset{}
			for uid, ready := range o.addrs {
				if ready {
					ss.Addresses = append(ss.Addresses, addrs[uid])
				} else {
					ss.NotReadyAddresses = append(ss.NotReadyAddresses, addrs[uid])
				}
			}
			sortAddresses(ss.Addresses)
			sortAddresses(ss.NotReadyAddresses)
			bySet[setKey] = ss
		}
		if o.port != nil {
			ss.Ports = append(ss.Ports, *o.port)
		}
	}
	out := make([]corev1.EndpointSubset, 0, len(bySet))
	for _, ss := range bySet {
		servicepods.SortByHash(ss.Ports)
		out = append(out, *ss)
	}
	servicepods.SortByHash(out)
	return out
}

// sortAddresses orders addresses by IP, then by the pod's UID, as kube's.
func sortAddresses(a []corev1.EndpointAddress) {
	slices.SortFunc(a, func(x, y corev1.EndpointAddress) int {
		return cmp.Or(strings.Compare(x.IP, y.IP), strings.Compare(string(x.TargetRef.UID), string(y.TargetRef.UID)))
	})
}

// truncate cuts subsets down to maxCapacity addresses, as kube's endpoint controller: the
// not-ready addresses go first; each subset keeps its share of what is cut, rounded up,
// until the room runs out. It reports whether it cut anything.
func truncate(subsets []corev1.EndpointSubset) bool {
	ready, notReady := 0, 0
	for _, ss := range subsets {
		ready, notReady = ready+len(ss.Addresses), notReady+len(ss.NotReadyAddresses)
	}
	if ready+notReady <= maxCapacity {
		return false
	}
	cutReady := ready > maxCapacity
	room, total := maxCapacity-ready, notReady
	if cutReady {
		room, total = maxCapacity, ready
	}
	left := room
	for i := range subsets {
		ss := &subsets[i]
		list := &ss.NotReadyAddresses
		if cutReady {
			list, ss.NotReadyAddresses = &ss.Addresses, nil
		}
		share := min(left, int(math.Ceil(float64(len(*list))/float64(total)*float64(room))))
		if len(*list) > share {
			*list = (*list)[:share]
		}
		left -= len(*list)
	}
	return true
}
