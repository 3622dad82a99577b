// Package policy enforces admission policies with k8s.io/apiserver's own plugins.
//
// ValidatingAdmissionPolicies and their bindings: CEL compilation and evaluation, params
// (by name or selector, parameterNotFoundAction), matchConditions, variables,
// validationActions Deny/Warn/Audit, messages and messageExpressions, failurePolicy, and
// the apiserver_validating_admission_policy_* metrics are upstream's.
//
// MutatingAdmissionPolicies and their bindings: ApplyConfiguration and JSONPatch
// mutations, matchConditions, variables, params, reinvocationPolicy, failurePolicy and the
// apiserver_mutating_admission_policy_* metrics are upstream's too. ApplyConfiguration
// merges by the served OpenAPI v3 schemas, which the plugin reads through the API server's
// loopback client as kube-apiserver's does (refreshed every 5 s).
package policy

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/admission/upstream"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"k8s.io/apimachinery/pkg/api/meta"
	apiserveradmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// Plugins are both policy plugins; they start together.
type Plugins struct {
	Mutating   *Mutating
	Validating *Validating
}

// Validating is the ValidatingAdmissionPolicy admission plugin.
type Validating struct {
	plugin  *validating.Plugin
	objects *upstream.Objects
	inf     *admission.Informers
	started atomic.Bool
}

// Mutating is the MutatingAdmissionPolicy admission plugin, one of the k8s.io/apiserver
// mutating plugins upstream.Mutating runs.
type Mutating struct {
	plugin  *mutating.Plugin
	started atomic.Bool
}

// policyPlugin is what both upstream plugins are configured through.
type policyPlugin interface {
	SetExternalKubeInformerFactory(f informers.SharedInformerFactory)
	SetExternalKubeClientSet(c kubernetes.Interface)
	SetRESTMapper(m meta.RESTMapper)
	SetDynamicClient(d dynamic.Interface)
	SetDrainedNotification(stop <-chan struct{})
	SetUnconditionalAuthorizer(a authorizer.UnconditionalAuthorizer)
	ValidateInitialization() error
}

// New makes both plugins on the shared informers; params of any kind are read through
// dynamic, their resources found through mapper.
func New(inf *admission.Informers, objects *upstream.Objects, mapper meta.RESTMapper, dyn dynamic.Interface) (*Plugins, error) {
	v, err := validating.NewPlugin(nil)
	if err != nil {
		return nil, err
	}
	m, err := mutating.NewPlugin(nil)
	if err != nil {
		return nil, err
	}
	// Enabled as kube-apiserver 1.36 enables it (the MutatingAdmissionPolicy feature is GA).
	m.SetEnabled(true)
	for _, p := range []policyPlugin{v, m} {
		p.SetExternalKubeInformerFactory(inf.Factory)
		p.SetExternalKubeClientSet(inf.Client)
		p.SetRESTMapper(mapper)
		p.SetDynamicClient(dyn)
	}
	return &Plugins{
		Mutating:   &Mutating{plugin: m},
		Validating: &Validating{plugin: v, objects: objects, inf: inf},
	}, nil
}

// Start begins compiling and matching policies, until ctx ends; authz answers the
// policies' `authorizer` CEL variable. It must run before the shared informers start.
func (p *Plugins) Start(ctx context.Context, authz authorizer.UnconditionalAuthorizer) error {
	for _, plugin := range []struct {
		name string
		policyPlugin
	}{{validating.PluginName, p.Validating.plugin}, {mutating.PluginName, p.Mutating.plugin}} {
		plugin.SetDrainedNotification(ctx.Done())
		plugin.SetUnconditionalAuthorizer(authz)
		if err := plugin.ValidateInitialization(); err != nil {
			return fmt.Errorf("%s: %w", plugin.name, err)
		}
	}
	p.Validating.started.Store(true)
	p.Mutating.started.Store(true)
	return nil
}

// AdmitsConnect: policies see CONNECTs (exec, attach, port-forward) too.
func (p *Validating) AdmitsConnect() {}

// Validate refuses a write a binding's policy denies, and sends the warnings of Warn.
func (p *Validating) Validate(ctx context.Context, a *generic.Attributes) error {
	if !p.started.Load() || !p.inf.Started() {
		return nil
	}
	attrs, err := upstream.Attributes(ctx, a)
	if err != nil {
		return err
	}
	return p.plugin.Validate(ctx, attrs, p.objects)
}

// Admit applies the mutations of the policies bound to the write.
func (p *Mutating) Admit(ctx context.Context, a apiserveradmission.Attributes, o apiserveradmission.ObjectInterfaces) error {
	if !p.started.Load() {
		return nil
	}
	return p.plugin.Admit(ctx, a, o)
}

// Handles says whether the plugin sees an operation: creates and updates.
func (p *Mutating) Handles(op apiserveradmission.Operation) bool { return p.plugin.Handles(op) }

var _ apiserveradmission.MutationInterface = (*Mutating)(nil)
