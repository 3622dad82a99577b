// Package defaultingressclass is Kubernetes' DefaultIngressClass admission plugin: an Ingress
// created without a class (neither spec.ingressClassName nor the older
// kubernetes.io/ingress.class annotation) gets the IngressClass annotated
// ingressclass.kubernetes.io/is-default-class=true, the newest one when several are.
package defaultingressclass

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	"k8s.io/apimachinery/pkg/labels"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
)

// Plugin reads the classes from the admission informers.
type Plugin struct {
	classes networkinglisters.IngressClassLister
	synced  cache.InformerSynced
	inf     *admission.Informers
}

// New is the plugin, registering its informer in inf.
func New(inf *admission.Informers) *Plugin {
	ic := inf.Factory.Networking().V1().IngressClasses()
	return &Plugin{classes: ic.Lister(), synced: ic.Informer().HasSynced, inf: inf}
}

// Admit sets the default class on an Ingress being created without one.
func (p *Plugin) Admit(ctx context.Context, a *generic.Attributes) error {
	if a.Operation != generic.Create || a.Resource.GroupResource() != networkingv1.Resource("ingresses") || a.Subresource != "" {
		return nil
	}
	ing, ok := a.Object.(*networkingv1.Ingress)
	if !ok || ing.Spec.IngressClassName != nil {
		return nil
	}
	if _, ok := ing.Annotations[networkingv1beta1.AnnotationIngressClass]; ok {
		return nil
	}
	if ready, err := p.inf.Wait(ctx, a, p.synced); !ready {
		return err
	}
	classes, err := p.classes.List(labels.Everything())
	if err != nil {
		return admission.Forbidden(a, err)
	}
	def := admission.NewestDefault(classes, func(ic *networkingv1.IngressClass) bool {
		return ic.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true"
	})
	if def != nil {
		ing.Spec.IngressClassName = &def.Name
	}
	return nil
}
