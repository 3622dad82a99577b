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
	"k8s.io/apimachinery/pkg/labels"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
)

// Plugin reads PriorityClasses from the shared informer, as kube-apiserver's plugin reads its
// lister: a pod create costs no read of the store (with etcd, a round trip to learn its
// revision). A named class the informer has not seen yet (created a moment before) is read
// from the store before the pod is refused; the globalDefault class, as in Kubernetes, is
// the informer's. Before the informers start (the server's own bootstrap writes) the store
// answers both.
type Plugin struct {
	informers *admission.Informers
	lister    schedulinglisters.PriorityClassLister
	synced    func() bool
	store     store.Interface
	classes   *registry.Resource
}

// New is the plugin, registering its informer in inf; st answers what the informer lacks.
func New(inf *admission.Informers, st store.Interface, reg *registry.Registry) *Plugin {
	classes, _ := reg.Lookup(schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"))
	pc := inf.Factory.Scheduling().V1().PriorityClasses()
	return &Plugin{informers: inf, lister: pc.Lister(), synced: pc.Informer().HasSynced, store: st, classes: classes}
}

// Admit resolves the priority of a pod being created.
func (p *Plugin) Admit(ctx context.Context, a *generic.Attributes) error {
	if a.Operation != generic.Create || a.Subresource != "" || a.Resource.Group != "" || a.Resource.Resource != "pods" {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || p.classes == nil {
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

// resolve finds the named class, or with no name the globalDefault class (the one with the
// lowest value if several claim it, as Kubernetes picks); nil when there is none.
func (p *Plugin) resolve(ctx context.Context, a *generic.Attributes, name string) (*schedulingv1.PriorityClass, error) {
	cached, err := p.informers.Wait(ctx, a, p.synced)
	if err != nil {
		return nil, err
	}
	if name != "" {
		if cached {
			if pc, err := p.lister.Get(name); err == nil {
				return pc, nil
			}
		}
		return p.stored(ctx, name)
	}
	var all []*schedulingv1.PriorityClass
	if cached {
		if all, err = p.lister.List(labels.Everything()); err != nil {
			return nil, err
		}
	} else if all, err = p.storedAll(ctx); err != nil {
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

// stored reads the named class from the store.
func (p *Plugin) stored(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	kv, err := p.store.Get(ctx, generic.Key(p.classes, "", name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierrors.NewForbidden(corev1.Resource("pods"), "",
			fmt.Errorf("no PriorityClass with name %s was found", name))
	}
	if err != nil {
		return nil, err
	}
	obj, err := generic.Decode(p.classes, kv.Value, kv.Revision)
	if err != nil {
		return nil, err
	}
	return obj.(*schedulingv1.PriorityClass), nil
}

// storedAll reads every class from the store.
func (p *Plugin) storedAll(ctx context.Context) ([]*schedulingv1.PriorityClass, error) {
	kvs, _, err := p.store.List(ctx, generic.ListPrefix(p.classes, ""))
	if err != nil {
		return nil, err
	}
	all := make([]*schedulingv1.PriorityClass, 0, len(kvs))
	for _, kv := range kvs {
		obj, err := generic.Decode(p.classes, kv.Value, kv.Revision)
		if err != nil {
			return nil, err
		}
		all = append(all, obj.(*schedulingv1.PriorityClass))
	}
	return all, nil
}
