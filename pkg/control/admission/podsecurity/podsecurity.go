// Package podsecurity is Kubernetes' PodSecurity admission plugin, a thin adapter over
// k8s.io/pod-security-admission: a namespace's pod-security.kubernetes.io/enforce label
// refuses pods that break its level (privileged, baseline, restricted), warn sends
// `Warning:` headers, audit is evaluated (there is no audit log to annotate yet); workloads
// with a pod template (Deployments, Jobs, ...) get the warnings only, as upstream. No
// namespace, user or runtime class is exempt.
package podsecurity

import (
	"context"
	"errors"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/warning"
	psadmission "k8s.io/pod-security-admission/admission"
	"k8s.io/pod-security-admission/admission/api/load"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"
)

// Plugin delegates every decision to the library's Admission.
type Plugin struct {
	informers *admission.Informers
	synced    func() bool
	delegate  *psadmission.Admission
}

// New is the plugin with the default configuration (every level "privileged" unless a
// namespace label says otherwise, no exemptions); namespaces come from the shared
// informer, pods (to warn about existing ones when a namespace's enforce level changes)
// from the API.
func New(inf *admission.Informers) (*Plugin, error) {
	config, err := load.LoadFromData(nil)
	if err != nil {
		return nil, err
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, err
	}
	ns := inf.Factory.Core().V1().Namespaces()
	d := &psadmission.Admission{
		Configuration:    config,
		Evaluator:        evaluator,
		Metrics:          noMetrics{},
		PodSpecExtractor: psadmission.DefaultPodSpecExtractor{},
		NamespaceGetter:  psadmission.NamespaceGetterFromListerAndClient(ns.Lister(), inf.Client),
		PodLister:        psadmission.PodListerFromClient(inf.Client),
	}
	if err := d.CompleteConfiguration(); err != nil {
		return nil, err
	}
	if err := d.ValidateConfiguration(); err != nil {
		return nil, err
	}
	return &Plugin{informers: inf, synced: ns.Informer().HasSynced, delegate: d}, nil
}

// Validate evaluates creates and updates of namespaces, pods and pod-template workloads.
func (p *Plugin) Validate(ctx context.Context, a *generic.Attributes) error {
	if a.Operation != generic.Create && a.Operation != generic.Update {
		return nil
	}
	gr := a.Resource.GroupResource()
	if gr != corev1.Resource("namespaces") && gr != corev1.Resource("pods") && !p.delegate.PodSpecExtractor.HasPodSpec(gr) {
		return nil
	}
	ready, err := p.informers.Wait(ctx, a, p.synced)
	if err != nil || !ready {
		return err
	}
	user, _ := authn.UserFrom(ctx)
	result := p.delegate.Validate(ctx, &api.AttributesRecord{
		Name: a.Name, Namespace: a.Namespace, Kind: a.Resource.GVK(), Resource: a.Resource.GroupVersionResource,
		Subresource: a.Subresource, Operation: admissionv1.Operation(a.Operation),
		Object: a.Object, OldObject: oldObject(a), Username: user.Name,
	})
	for _, w := range result.Warnings {
		warning.AddWarning(ctx, "", w)
	}
	if result.Allowed {
		return nil
	}
	// The library's message, reason and code over a generic refusal, as kube-apiserver's plugin.
	refusal := admission.Forbidden(a, errors.New("Not allowed by PodSecurity")).(*apierrors.StatusError)
	if r := result.Result; r != nil {
		if r.Message != "" {
			refusal.ErrStatus.Message = r.Message
		}
		if r.Reason != "" {
			refusal.ErrStatus.Reason = r.Reason
		}
		if r.Details != nil {
			refusal.ErrStatus.Details = r.Details
		}
		if r.Code != 0 {
			refusal.ErrStatus.Code = r.Code
		}
	}
	return refusal
}

// oldObject is nil for a create (the library reads it only for updates; a typed nil
// would not be nil to it).
func oldObject(a *generic.Attributes) runtime.Object {
	if a.OldObject == nil {
		return nil
	}
	return a.OldObject
}

// noMetrics records nothing: the library's recorder is a component-base registry, and
// miniapi's /metrics is a Prometheus one.
type noMetrics struct{}

func (noMetrics) RecordEvaluation(metrics.Decision, api.LevelVersion, metrics.Mode, api.Attributes) {}
func (noMetrics) RecordExemption(api.Attributes)                                                    {}
func (noMetrics) RecordError(bool, api.Attributes)                                                  {}
