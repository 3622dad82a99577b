// Package servicecidrs keeps ServiceCIDRs, as kube-controller-manager's service-cidr-
// controller does: each gets the finalizer that holds it while cluster IPs of it are in
// use and a Ready condition (the API server's allocator takes cluster IPs from the Ready
// ones); one being deleted keeps its finalizer, marked not Ready ("Terminating"), while an
// IPAddress of its ranges is in no other ServiceCIDR, and loses it a grace period after
// the deletion began (so that no allocation that still saw it Ready is left orphaned).
package servicecidrs

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	networkinginformers "k8s.io/client-go/informers/networking/v1"
	"k8s.io/client-go/kubernetes"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/minik8s/minik8s/internal/controller/workloop"
)

// Name is the controller's name, as kube-controller-manager's --controllers knows it.
const Name = "service-cidr-controller"

const (
	finalizer = "networking.k8s.io/service-cidr-finalizer"
	// deletionGracePeriod is kube's: how long a deleted ServiceCIDR is held after its last
	// IPAddress went, for the allocators to see it go.
	deletionGracePeriod = 10 * time.Second
	readyMessage        = "Kubernetes Service CIDR is ready"
	orphansMessage      = "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"
)

// Controller keeps ServiceCIDRs' finalizers and Ready conditions.
type Controller struct {
	client kubernetes.Interface
	cidrs  networkinglisters.ServiceCIDRLister
	ips    networkinglisters.IPAddressLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	now    func() time.Time
	log    *slog.Logger
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, cidrs networkinginformers.ServiceCIDRInformer, ips networkinginformers.IPAddressInformer, log *slog.Logger) (*Controller, error) {
	c := &Controller{client: client, cidrs: cidrs.Lister(), ips: ips.Lister(), now: time.Now, log: log,
		synced: []cache.InformerSynced{cidrs.Informer().HasSynced, ips.Informer().HasSynced},
		queue:  workloop.NewQueue[string]("service_cidrs")}
	enqueue := workloop.Enqueue(c.queue)
	if _, err := cidrs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { enqueue(obj); c.enqueueOverlapped(obj) },
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return nil, err
	}
	// An IPAddress that goes may free the ServiceCIDR being deleted that holds it.
	_, err := ips.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		ip, ok := workloop.Object[*networkingv1.IPAddress](obj)
		if !ok {
			return
		}
		addr, err := netip.ParseAddr(ip.Name)
		if err != nil {
			return
		}
		all, _ := c.cidrs.List(labels.Everything())
		for _, sc := range all {
			if sc.DeletionTimestamp != nil && contains(sc, addr) {
				c.queue.Add(sc.Name)
			}
		}
	}})
	return c, err
}

// enqueueOverlapped queues the ServiceCIDRs being deleted that a new one overlaps: it may
// hold the IPAddresses that kept them.
func (c *Controller) enqueueOverlapped(obj any) {
	added, ok := workloop.Object[*networkingv1.ServiceCIDR](obj)
	if !ok {
		return
	}
	all, _ := c.cidrs.List(labels.Everything())
	for _, sc := range all {
		if sc.DeletionTimestamp != nil && overlap(sc, added) {
			c.queue.Add(sc.Name)
		}
	}
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
}

func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	sc, found, err := workloop.Found(c.cidrs.Get(name))
	if !found {
		return 0, err
	}
	if sc.DeletionTimestamp == nil {
		if !slices.Contains(sc.Finalizers, finalizer) {
			// A strategic merge patch adds it to the others, as kube's controller adds it.
			patch := []byte(`{"metadata":{"finalizers":["` + finalizer + `"]}}`)
			if sc, err = c.client.NetworkingV1().ServiceCIDRs().Patch(ctx, sc.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return 0, err
			}
		}
		return 0, c.setReady(ctx, sc, metav1.ConditionTrue, "", readyMessage)
	}
	if !slices.Contains(sc.Finalizers, finalizer) {
		return 0, nil
	}
	if c.orphansLeft(sc) {
		return 0, c.setReady(ctx, sc, metav1.ConditionFalse, networkingv1.ServiceCIDRReasonTerminating, orphansMessage)
	}
	if wait := deletionGracePeriod - c.now().Sub(sc.DeletionTimestamp.Time); wait > 0 {
		return wait, nil
	}
	sc = sc.DeepCopy()
	sc.Finalizers = slices.DeleteFunc(sc.Finalizers, func(f string) bool { return f == finalizer })
	_, err = c.client.NetworkingV1().ServiceCIDRs().Update(ctx, sc, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	return 0, err
}

// setReady writes the Ready condition unless it says so already.
func (c *Controller) setReady(ctx context.Context, sc *networkingv1.ServiceCIDR, status metav1.ConditionStatus, reason, message string) error {
	if cur := apimeta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady); cur != nil &&
		cur.Status == status && cur.Reason == reason && cur.Message == message {
		return nil
	}
	sc = sc.DeepCopy()
	apimeta.SetStatusCondition(&sc.Status.Conditions, metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady,
		Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(c.now())})
	_, err := c.client.NetworkingV1().ServiceCIDRs().UpdateStatus(ctx, sc, metav1.UpdateOptions{})
	return err
}

// orphansLeft: an IPAddress of sc's ranges is in no other ServiceCIDR that is staying.
func (c *Controller) orphansLeft(sc *networkingv1.ServiceCIDR) bool {
	all, err := c.cidrs.List(labels.Everything())
	if err != nil {
		return true
	}
	ips, err := c.ips.List(labels.Everything())
	if err != nil {
		return true
	}
	for _, ip := range ips {
		addr, err := netip.ParseAddr(ip.Name)
		if err != nil || !contains(sc, addr) {
			continue
		}
		kept := slices.ContainsFunc(all, func(other *networkingv1.ServiceCIDR) bool {
			return other.Name != sc.Name && other.DeletionTimestamp == nil && contains(other, addr)
		})
		if !kept {
			return true
		}
	}
	return false
}

// overlap: a CIDR of a and one of b share addresses.
func overlap(a, b *networkingv1.ServiceCIDR) bool {
	for _, x := range a.Spec.CIDRs {
		px, err := netip.ParsePrefix(x)
		if err != nil {
			continue
		}
		for _, y := range b.Spec.CIDRs {
			if py, err := netip.ParsePrefix(y); err == nil && px.Overlaps(py) {
				return true
			}
		}
	}
	return false
}

// contains: one of sc's CIDRs holds addr.
func contains(sc *networkingv1.ServiceCIDR, addr netip.Addr) bool {
	return slices.ContainsFunc(sc.Spec.CIDRs, func(s string) bool {
		p, err := netip.ParsePrefix(s)
		return err == nil && p.Contains(addr)
	})
}
