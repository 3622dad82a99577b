// Package policy enforces ValidatingAdmissionPolicies and their bindings with
// k8s.io/apiserver's own ValidatingAdmissionPolicy plugin: CEL compilation and evaluation,
// params (by name or selector, parameterNotFoundAction), matchConditions, variables,
// validationActions Deny/Warn/Audit, messages and messageExpressions, failurePolicy, and
// the apiserver_validating_admission_policy_* metrics are upstream's.
package policy

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/admission/upstream"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/dynamic"
)

// Plugin is the ValidatingAdmissionPolicy admission plugin.
type Plugin struct {
	plugin  *validating.Plugin
	objects *upstream.Objects
	inf     *admission.Informers
	started atomic.Bool
}

// New makes the plugin on the shared informers; params of any kind are read through
// dynamic, their resources found through mapper.
func New(inf *admission.Informers, objects *upstream.Objects, mapper meta.RESTMapper, dyn dynamic.Interface) (*Plugin, error) {
	p, err := validating.NewPlugin(nil)
	if err != nil {
		return nil, err
	}
	p.SetExternalKubeInformerFactory(inf.Factory)
	p.SetExternalKubeClientSet(inf.Client)
	p.SetRESTMapper(mapper)
	p.SetDynamicClient(dyn)
	return &Plugin{plugin: p, objects: objects, inf: inf}, nil
}

// Start begins compiling and matching policies, until ctx ends; authz answers the
// policies' `authorizer` CEL variable. It must run before the shared informers start.
func (p *Plugin) Start(ctx context.Context, authz authorizer.UnconditionalAuthorizer) error {
	p.plugin.SetDrainedNotification(ctx.Done())
	p.plugin.SetUnconditionalAuthorizer(authz)
	if err := p.plugin.ValidateInitialization(); err != nil {
		return fmt.Errorf("ValidatingAdmissionPolicy: %w", err)
	}
	p.started.Store(true)
	return nil
}

// Validate refuses a write a binding's policy denies, and sends the warnings of Warn.
func (p *Plugin) Validate(ctx context.Context, a *generic.Attributes) error {
	if !p.started.Load() || !p.inf.Started() {
		return nil
	}
	attrs, err := upstream.Attributes(ctx, a)
	if err != nil {
		return err
	}
	return p.plugin.Validate(ctx, attrs, p.objects)
}
