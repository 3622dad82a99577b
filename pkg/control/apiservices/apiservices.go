// Package apiservices keeps, inside miniapi, an APIService (apiregistration.k8s.io/v1) for
// every group version the API server serves itself, as kube-apiserver's autoregister and
// crdregistration controllers do in a cluster without extension API servers: a local one
// (spec.service unset, always available) for each built-in group version, with upstream's
// priorities, and one for each served version of a CustomResourceDefinition. The
// APIServices are kept by kube-aggregator's own autoregister controller, an API client
// over the API server's loopback identity.
package apiservices

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	crdinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	crdlisters "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"

	apidiscovery "github.com/minik8s/minik8s/pkg/control/apiserver/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"
)

// Start registers the group versions the API server lists in discovery, then keeps them
// and those of CustomResourceDefinitions until ctx ends, and keeps the availability of
// the APIServices served by a Service (Availability, reading Services and EndpointSlices
// from shared); cfg is the API server's loopback identity. Call it once the server serves
// every built-in group.
func Start(ctx context.Context, cfg *rest.Config, shared informers.SharedInformerFactory, log *slog.Logger) error {
	client, err := aggregatorclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("apiregistration client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	crds, err := crdclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("apiextensions client: %w", err)
	}
	factory := aggregatorinformers.NewSharedInformerFactory(client, 5*time.Minute)
	reg := autoregister.NewAutoRegisterController(factory.Apiregistration().V1().APIServices(), client.ApiregistrationV1())
	crdFactory := crdinformers.NewSharedInformerFactory(crds, 5*time.Minute)
	crdInformer := crdFactory.Apiextensions().V1().CustomResourceDefinitions()
	if err := registerCRDs(crdInformer.Informer(), crdInformer.Lister(), reg, log); err != nil {
		return err
	}
	availability, err := NewAvailability(client, factory.Apiregistration().V1().APIServices(), shared.Core().V1().Services(),
		shared.Discovery().V1().EndpointSlices(), log.With("controller", "RemoteAvailabilityController"))
	if err != nil {
		return err
	}
	go func() {
		// The built-in group versions are those served at start, as upstream's are those
		// of the paths kube-apiserver lists; the listener may not answer yet.
		var groups *metav1.APIGroupList
		err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
			var discErr error
			groups, discErr = disc.ServerGroups()
			return discErr == nil, nil
		})
		if err != nil {
			return // stopped
		}
		for _, g := range groups.Groups {
			for _, v := range g.Versions {
				gv := schema.GroupVersion{Group: g.Name, Version: v.Version}
				if p, ok := apidiscovery.BuiltinPriorities[gv]; ok {
					reg.AddAPIServiceToSyncOnStart(local(gv, p))
				}
			}
		}
		factory.Start(ctx.Done())
		crdFactory.Start(ctx.Done())
		shared.Start(ctx.Done()) // Services and EndpointSlices, if nothing else asked for them
		go availability.Run(ctx)
		reg.Run(1, ctx.Done())
	}()
	return nil
}

// local is the APIService of a group version the API server serves itself.
func local(gv schema.GroupVersion, p apidiscovery.Priority) *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group},
		Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version,
			GroupPriorityMinimum: p.Group, VersionPriority: p.Version},
	}
}

// registerCRDs keeps an APIService for each served version of a CustomResourceDefinition,
// as crdregistration does: a group version stays while any CustomResourceDefinition serves it.
func registerCRDs(informer cache.SharedIndexInformer, lister crdlisters.CustomResourceDefinitionLister, reg autoregister.AutoAPIServiceRegistration, log *slog.Logger) error {
	check := func(gv schema.GroupVersion) {
		all, err := lister.List(labels.Everything())
		if err != nil {
			log.Error("listing CustomResourceDefinitions", "err", err)
			return
		}
		for _, crd := range all {
			for _, v := range crd.Spec.Versions {
				if crd.Spec.Group == gv.Group && v.Name == gv.Version && v.Served {
					reg.AddAPIServiceToSync(local(gv, apidiscovery.CustomResourcePriority))
					return
				}
			}
		}
		reg.RemoveAPIServiceToSync(gv.Version + "." + gv.Group)
	}
	changed := func(objs ...any) {
		for _, obj := range objs {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
				for _, v := range crd.Spec.Versions {
					check(schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name})
				}
			}
		}
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(obj) },
		UpdateFunc: func(old, obj any) { changed(old, obj) },
		DeleteFunc: func(obj any) { changed(obj) },
	})
	return err
}
