// Package loadbalancer gives type=LoadBalancer Services an address on bare metal, the role a
// cloud's service controller plays: status.loadBalancer.ingress from --loadbalancer-ip-pool
// (spec.loadBalancerIP honoured when it is in the pool and free), released when the
// Service is deleted or stops being a LoadBalancer. miniproxy then answers on the address.
// Without a pool, or with the pool exhausted, the Service stays pending with a Warning
// Event saying why.
package loadbalancer

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/minik8s/minik8s/internal/controller/allocated"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// Controller is the LoadBalancer address controller.
type Controller struct {
	client   kubernetes.Interface
	services corelisters.ServiceLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	pool     Pool // zero: no pool
	log      *slog.Logger
	used     allocated.Owners[netip.Addr] // address -> Service key
}

// New wires the controller to the shared Service informer.
func New(client kubernetes.Interface, services coreinformers.ServiceInformer, pool Pool, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	c := &Controller{client: client, services: services.Lister(), synced: services.Informer().HasSynced, pool: pool, recorder: recorder, log: log,
		queue: workloop.NewQueue[string]("service")}
	_, err := services.Informer().AddEventHandler(workloop.OnEvery(workloop.Enqueue(c.queue)))
	return c, err
}

// Run works the queue with one worker until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkersFrom(ctx, 1, c.queue, c.log, c.loadUsed, c.sync, c.synced)
}

// loadUsed reads the addresses already handed out from the Services themselves (so they
// survive restarts).
func (c *Controller) loadUsed() {
	c.used = allocated.Owners[netip.Addr]{}
	all, _ := c.services.List(labels.Everything())
	for _, svc := range all {
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if ip, err := netip.ParseAddr(ing.IP); err == nil && svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				c.used[ip] = svc.Namespace + "/" + svc.Name
			}
		}
	}
}

// release frees key's address and looks again at the Services still waiting for one;
// false: key held none.
func (c *Controller) release(key string) bool {
	if !c.used.Release(key) {
		return false
	}
	all, _ := c.services.List(labels.Everything())
	for _, svc := range all {
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) == 0 {
			c.queue.Add(svc.Namespace + "/" + svc.Name)
		}
	}
	return true
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	svc, found, err := workloop.Lookup(key, c.services.Services)
	if err != nil {
		return 0, err
	}
	if !found {
		c.release(key)
		return 0, nil
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		// No longer a LoadBalancer: its address goes (miniapi cleared the status, as
		// kube-apiserver), with the Events of the cloud service controller's deletion.
		if c.release(key) {
			c.recorder.Event(svc, corev1.EventTypeNormal, "DeletingLoadBalancer", "Deleting load balancer")
			c.recorder.Event(svc, corev1.EventTypeNormal, "DeletedLoadBalancer", "Deleted load balancer")
		}
		if len(svc.Status.LoadBalancer.Ingress) > 0 {
			return 0, c.writeIngress(ctx, svc, nil)
		}
		return 0, nil
	}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ip, err := netip.ParseAddr(ing.IP); err == nil && c.used[ip] == key {
			return 0, nil // has its address
		}
	}
	ip, reason, msg := c.choose(svc, key)
	if reason != "" {
		c.recorder.Event(svc, corev1.EventTypeWarning, reason, msg)
		return 0, nil // pending until the Service or the pool changes
	}
	c.recorder.Event(svc, corev1.EventTypeNormal, "EnsuringLoadBalancer", "Ensuring load balancer")
	c.used[ip] = key
	if err := c.writeIngress(ctx, svc, []corev1.LoadBalancerIngress{{IP: ip.String(), IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}}); err != nil {
		delete(c.used, ip)
		return 0, err
	}
	c.recorder.Event(svc, corev1.EventTypeNormal, "EnsuredLoadBalancer", "Ensured load balancer")
	return 0, nil
}

// choose picks the Service's address, or says why it has none.
func (c *Controller) choose(svc *corev1.Service, key string) (netip.Addr, string, string) {
	if !c.pool.first.IsValid() {
		return netip.Addr{}, "NoLoadBalancerIPPool", "no --loadbalancer-ip-pool is configured on miniapi: the Service stays pending"
	}
	if want := svc.Spec.LoadBalancerIP; want != "" {
		ip, err := netip.ParseAddr(want)
		switch {
		case err != nil || !c.pool.Contains(ip):
			return netip.Addr{}, "LoadBalancerIPNotInPool", fmt.Sprintf("spec.loadBalancerIP %s is not in the pool %s-%s", want, c.pool.first, c.pool.last)
		case !c.used.FreeFor(ip, key):
			return netip.Addr{}, "LoadBalancerIPInUse", fmt.Sprintf("spec.loadBalancerIP %s is used by Service %s", want, c.used[ip])
		}
		return ip, "", ""
	}
	ip, ok := c.pool.Free(c.used)
	if !ok {
		return netip.Addr{}, "LoadBalancerIPPoolExhausted", fmt.Sprintf("every address of the pool %s-%s is in use", c.pool.first, c.pool.last)
	}
	return ip, "", ""
}

func (c *Controller) writeIngress(ctx context.Context, svc *corev1.Service, ingress []corev1.LoadBalancerIngress) error {
	updated := svc.DeepCopy()
	updated.Status.LoadBalancer.Ingress = ingress
	_, err := c.client.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}
