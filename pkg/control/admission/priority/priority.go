// Package priority is Kubernetes' Priority admission plugin: a pod's priorityClassName
// (or the cluster's globalDefault class) becomes spec.priority and spec.preemptionPolicy
// when the pod is created, so the scheduler orders and preempts by it.
package priority

import (
	"context"
	"errors"
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Plugin reads PriorityClasses through admission.ClusterObjects.
type Plugin struct {
	classes *admission.ClusterObjects[*schedulingv1.PriorityClass]
}

// New is the plugin, registering its informer in inf; st answers what the informer lacks.
func New(inf *admission.Informers, st store.Interface, reg *registry.Registry) *Plugin {
	return &Plugin{classes: admission.NewClusterObjects[*schedulingv1.PriorityClass](inf, st, reg, schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"))}
}

// Admit resolves the priority of a pod being created.
func (p *Plugin) Admit(ctx context.Context, a *generic.Attributes) error {
	pod := admission.PodCreate(a)
	if pod == nil || !p.classes.Served() {
		return nil
	}
	class, err := p.resolve(ctx, a, pod.Spec.PriorityClassName)
	if err != nil {
		return err
	}
	value, policy, name := int32(0), corev1.PreemptLowerPriority, pod.Spec.PriorityClassName
	if class != nil {
		value, name = class.Value, class.Name
		if class.PreemptionPolicy != nil {
			policy = *class.PreemptionPolicy
		}
	}
	forbidden := func(msg string) error {
		return apierrors.NewForbidden(a.Resource.GroupResource(), pod.Name, errors.New(msg))
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return forbidden(fmt.Sprintf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, value))
	}
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != policy {
		return forbidden(fmt.Sprintf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, policy))
	}
	pod.Spec.PriorityClassName = name
	pod.Spec.Priority = &value
	pod.Spec.PreemptionPolicy = &policy
	return nil
}

// Validate refuses a PriorityClass marked globalDefault while another class is the default,
// as Kubernetes' Priority plugin does: there is only one.
func (p *Plugin) Validate(ctx context.Context, a *generic.Attributes) error {
	if a.Resource.Group != schedulingv1.GroupName || a.Resource.Resource != "priorityclasses" || a.Subresource != "" ||
		(a.Operation != generic.Create && a.Operation != generic.Update) || !p.classes.Served() {
		return nil
	}
	pc, ok := a.Object.(*schedulingv1.PriorityClass)
	if !ok || !pc.GlobalDefault {
		return nil
	}
	def, err := p.resolve(ctx, a, "")
	if err != nil {
		return fmt.Errorf("failed to get default priority class: %v", err)
	}
	if def != nil && (a.Operation == generic.Create || def.Name != pc.Name) {
		return admission.Forbidden(a, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", def.Name))
	}
	return nil
}

// resolve finds the named class, or with no name the globalDefault class (the one with the
// lowest value if several claim it, as Kubernetes picks); nil when there is none.
func (p *Plugin) resolve(ctx context.Context, a *generic.Attributes, name string) (*schedulingv1.PriorityClass, error) {
	if name != "" {
		pc, ok, err := p.classes.Get(ctx, a, name)
		if err == nil && !ok {
			err = admission.Forbidden(a, fmt.Errorf("no PriorityClass with name %s was found", name))
		}
		return pc, err
	}
	all, err := p.classes.List(ctx, a)
	if err != nil {
		return nil, err
	}
	var def *schedulingv1.PriorityClass
	for _, pc := range all {
		if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	return def, nil
}
