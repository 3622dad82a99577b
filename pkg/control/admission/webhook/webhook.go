// Package webhook calls the admission webhooks of MutatingWebhookConfigurations and
// ValidatingWebhookConfigurations, through k8s.io/apiserver's own MutatingAdmissionWebhook
// and ValidatingAdmissionWebhook plugins: matching (rules, selectors, matchConditions,
// matchPolicy), the HTTPS calls, failurePolicy, timeouts, dryRun, reinvocation, JSON
// patches, warnings, audit annotations and the apiserver_admission_webhook_* metrics are
// theirs. A Service clientConfig is resolved to one of the Service's ready endpoints (as
// kube-apiserver with --enable-aggregator-routing), so miniapi needs no route to cluster IPs.
package webhook

import (
	"context"
	"fmt"
	"net/url"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/admission/upstream"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/informers"
	listersv1 "k8s.io/client-go/listers/core/v1"
)

// Validating runs the validating webhooks.
type Validating struct {
	plugin  *validating.Plugin
	objects *upstream.Objects
	inf     *admission.Informers
}

// New makes both plugins on the shared informers (configurations, namespaces, services,
// endpoint slices). The mutating one runs in upstream.Mutating, after the
// MutatingAdmissionPolicies, which shares its reinvocation with theirs.
func New(inf *admission.Informers, objects *upstream.Objects) (*mutating.Plugin, *Validating, error) {
	m, err := mutating.NewMutatingWebhook(nil)
	if err != nil {
		return nil, nil, err
	}
	v, err := validating.NewValidatingAdmissionWebhook(nil)
	if err != nil {
		return nil, nil, err
	}
	resolver, err := newEndpointResolver(inf.Factory)
	if err != nil {
		return nil, nil, err
	}
	m.SetExternalKubeClientSet(inf.Client)
	m.SetExternalKubeInformerFactory(inf.Factory)
	m.SetServiceResolver(resolver)
	v.SetExternalKubeClientSet(inf.Client)
	v.SetExternalKubeInformerFactory(inf.Factory)
	v.SetServiceResolver(resolver)
	if err := m.ValidateInitialization(); err != nil {
		return nil, nil, fmt.Errorf("mutating admission webhooks: %w", err)
	}
	if err := v.ValidateInitialization(); err != nil {
		return nil, nil, fmt.Errorf("validating admission webhooks: %w", err)
	}
	return m, &Validating{plugin: v, objects: objects, inf: inf}, nil
}

// AdmitsConnect: webhooks see CONNECTs (exec, attach, port-forward) too.
func (v *Validating) AdmitsConnect() {}

// Validate calls the matching validating webhooks (in parallel, as upstream).
func (v *Validating) Validate(ctx context.Context, a *generic.Attributes) error {
	if !v.inf.Started() {
		return nil
	}
	attrs, err := upstream.Attributes(ctx, a)
	if err != nil {
		return err
	}
	return v.plugin.Validate(ctx, attrs, v.objects)
}

// endpointResolver resolves a webhook's Service to one of its ready endpoints, with
// k8s.io/apiserver's resolver that kube-apiserver uses under --enable-aggregator-routing.
type endpointResolver struct {
	services listersv1.ServiceLister
	slices   proxy.EndpointSliceGetter
}

func newEndpointResolver(f informers.SharedInformerFactory) (*endpointResolver, error) {
	slices, err := proxy.NewEndpointSliceListerGetter(f.Discovery().V1().EndpointSlices().Lister())
	if err != nil {
		return nil, err
	}
	return &endpointResolver{services: f.Core().V1().Services().Lister(), slices: slices}, nil
}

func (r *endpointResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return proxy.ResolveEndpoint(r.services, r.slices, namespace, name, port)
}

var (
	_ generic.ValidatingAdmission = (*Validating)(nil)
	_ generic.ConnectAdmission    = (*Validating)(nil)
)
