package apiservices

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	"github.com/minik8s/minik8s/pkg/control/registry/apiregistration"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/util/proxy"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiservicehelper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	apiserviceinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions/apiregistration/v1"
	apiservicelisters "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"
)

// Availability keeps the Available condition of every APIService served by a Service, as
// kube-aggregator's remote availability controller does, with its checks and words: the
// Service missing (ServiceNotFound), not listening on the APIService's port
// (ServicePortError), without EndpointSlices (EndpointsNotFound) or without a ready
// address on that port (MissingEndpoints). Where kube-aggregator would then ask the
// extension API server for its discovery, miniapi, which proxies no request to it, leaves
// the registry's ProxyNotSupported.
type Availability struct {
	client   aggregatorclient.Interface
	apis     apiservicelisters.APIServiceLister
	services corelisters.ServiceLister
	slices   proxy.EndpointSliceGetter
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	log      *slog.Logger
}

// NewAvailability wires the controller to the APIService, Service and EndpointSlice
// informers.
func NewAvailability(client aggregatorclient.Interface, apis apiserviceinformers.APIServiceInformer, services coreinformers.ServiceInformer,
	endpointSlices discoveryinformers.EndpointSliceInformer, log *slog.Logger) (*Availability, error) {
	getter, err := proxy.NewEndpointSliceListerGetter(endpointSlices.Lister())
	if err != nil {
		return nil, err
	}
	c := &Availability{client: client, apis: apis.Lister(), services: services.Lister(), slices: getter, log: log,
		synced: []cache.InformerSynced{apis.Informer().HasSynced, services.Informer().HasSynced, endpointSlices.Informer().HasSynced},
		queue:  workloop.NewQueue[string]("RemoteAvailabilityController")}
	if _, err := apis.Informer().AddEventHandler(workloop.OnEvery(workloop.Enqueue(c.queue))); err != nil {
		return nil, err
	}
	// A Service or its EndpointSlices changing queues the APIServices naming that Service.
	byService := func(namespace, name string) {
		all, _ := c.apis.List(labels.Everything())
		for _, a := range all {
			if s := a.Spec.Service; s != nil && s.Namespace == namespace && s.Name == name {
				c.queue.Add(a.Name)
			}
		}
	}
	if _, err := services.Informer().AddEventHandler(workloop.OnEvery(func(obj any) {
		if s, ok := workloop.Object[*corev1.Service](obj); ok {
			byService(s.Namespace, s.Name)
		}
	})); err != nil {
		return nil, err
	}
	_, err = endpointSlices.Informer().AddEventHandler(workloop.OnEvery(func(obj any) {
		if s, ok := workloop.Object[*discoveryv1.EndpointSlice](obj); ok && s.Labels[discoveryv1.LabelServiceName] != "" {
			byService(s.Namespace, s.Labels[discoveryv1.LabelServiceName])
		}
	}))
	return c, err
}

// Run works the queue until ctx ends.
func (c *Availability) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
}

func (c *Availability) sync(ctx context.Context, name string) (time.Duration, error) {
	orig, err := c.apis.Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if orig.Spec.Service == nil {
		return 0, nil // local: always available
	}
	cond := c.available(orig.Spec)
	updated := orig.DeepCopy()
	apiservicehelper.SetAPIServiceCondition(updated, cond)
	if equality.Semantic.DeepEqual(orig.Status, updated.Status) {
		return 0, nil
	}
	_, err = c.client.ApiregistrationV1().APIServices().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return 0, nil // gone, or a newer version is on its way to the cache
	}
	return 0, err
}

// available is the Available condition of an APIService served by ref.
func (c *Availability) available(spec apiregistrationv1.APIServiceSpec) apiregistrationv1.APIServiceCondition {
	ref := spec.Service
	unavailable := func(reason, format string, args ...any) apiregistrationv1.APIServiceCondition {
		return apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse,
			LastTransitionTime: metav1.Now(), Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	svc, err := c.services.Services(ref.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return unavailable("ServiceNotFound", "service/%s in %q is not present", ref.Name, ref.Namespace)
	}
	if err != nil {
		cond := unavailable("ServiceAccessError", "service/%s in %q cannot be checked due to: %v", ref.Name, ref.Namespace, err)
		cond.Status = apiregistrationv1.ConditionUnknown
		return cond
	}
	if svc.Spec.Type == corev1.ServiceTypeClusterIP {
		i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return ref.Port != nil && p.Port == *ref.Port })
		if i < 0 {
			return unavailable("ServicePortError", "service/%s in %q is not listening on port %d", ref.Name, ref.Namespace, *ref.Port)
		}
		portName := svc.Spec.Ports[i].Name
		found, err := c.slices.GetEndpointSlices(ref.Namespace, ref.Name)
		if err != nil {
			cond := unavailable("EndpointsAccessError", "service/%s in %q cannot be checked due to: %v", ref.Name, ref.Namespace, err)
			cond.Status = apiregistrationv1.ConditionUnknown
			return cond
		}
		if len(found) == 0 {
			return unavailable("EndpointsNotFound", "cannot find endpointslices for service/%s in %q", ref.Name, ref.Namespace)
		}
		if !hasAvailableEndpoint(portName, found) {
			return unavailable("MissingEndpoints", "endpointslices for service/%s in %q have no addresses with port name %q", ref.Name, ref.Namespace, portName)
		}
	}
	return unavailable(apiregistration.NotProxiedReason, "%s", apiregistration.NotProxiedMessage(spec.Group, spec.Version))
}

// hasAvailableEndpoint is kube-aggregator's: a slice with a ready endpoint and the port.
func hasAvailableEndpoint(portName string, found []*discoveryv1.EndpointSlice) bool {
	return slices.ContainsFunc(found, func(s *discoveryv1.EndpointSlice) bool {
		return slices.ContainsFunc(s.Endpoints, func(e discoveryv1.Endpoint) bool { return e.Conditions.Ready == nil || *e.Conditions.Ready }) &&
			slices.ContainsFunc(s.Ports, func(p discoveryv1.EndpointPort) bool { return p.Name != nil && *p.Name == portName && p.Port != nil })
	})
}
