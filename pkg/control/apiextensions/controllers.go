// Package apiextensions runs, inside miniapi, what apiextensions-apiserver runs beside
// kube-apiserver for CustomResourceDefinitions: its own naming controller (the NamesAccepted
// condition and status.acceptedNames) and establishing controller (Established), its finalizer (a deleted CRD's custom
// resources deleted: Terminating, InstanceDeletionInProgress), and the
// hand-over of every CustomResourceDefinition whose names are accepted to the API server,
// which serves its custom resources, and of the OpenAPI documents of the Established ones'
// served versions (kubectl explain and client-side validation read them). The controllers are API clients over a loopback
// identity, as upstream's are.
package apiextensions

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	crdinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	"k8s.io/apiextensions-apiserver/pkg/controller/establish"
	"k8s.io/apiextensions-apiserver/pkg/controller/finalizer"
	"k8s.io/apiextensions-apiserver/pkg/controller/status"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Served is told of the CustomResourceDefinitions to serve (whose names are accepted) and
// of those gone; it must be safe for calls from one goroutine at a time. A nil Served
// serves nothing (the CustomResourceDefinitions are still established).
type Served interface {
	Serve(crd *apiextensionsv1.CustomResourceDefinition) error
	Unserve(name string)
}

// Start runs the controllers until ctx ends; cfg is the API server's loopback identity.
// A nil openAPI publishes no OpenAPI documents of custom resources; metrics, when not nil,
// is where the controllers' counters are registered.
func Start(ctx context.Context, cfg *rest.Config, served Served, openAPI OpenAPI, metrics prometheus.Registerer, log *slog.Logger) error {
	client, err := crdclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("apiextensions client: %w", err)
	}
	factory := crdinformers.NewSharedInformerFactory(client, 5*time.Minute)
	crds := factory.Apiextensions().V1().CustomResourceDefinitions()
	naming := status.NewNamingConditionController(klog.FromContext(ctx), crds, client.ApiextensionsV1())
	establishing := establish.NewEstablishingController(crds, client.ApiextensionsV1())
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	cleanup := finalizer.NewCRDFinalizer(crds, client.ApiextensionsV1(), dynamicInstances{dyn})

	// Upstream's CRD handler queues a CRD for establishing once it serves it; so do we.
	handOver := func(obj any) {
		crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || !apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.NamesAccepted) {
			return
		}
		if served != nil {
			if err := served.Serve(crd); err != nil {
				log.Error("custom resources not served", "customresourcedefinition", crd.Name, "err", err)
				return
			}
		}
		establishing.QueueCRD(crd.Name, 0)
	}
	_, err = crds.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handOver,
		UpdateFunc: func(_, obj any) { handOver(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok && served != nil {
				served.Unserve(crd.Name)
			}
		},
	})
	if err != nil {
		return err
	}
	if openAPI != nil {
		publishing, err := newOpenAPIController(crds, openAPI, metrics, log)
		if err != nil {
			return err
		}
		go publishing.run(ctx, crds.Informer().HasSynced)
	}
	factory.Start(ctx.Done())
	go naming.RunWithContext(ctx)
	go establishing.RunWithContext(ctx)
	go cleanup.RunWithContext(2, ctx)
	return nil
}
