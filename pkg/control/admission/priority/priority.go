// Package priority is Kubernetes' Priority admission plugin: a pod's priorityClassName
// (or the cluster's globalDefault class) becomes spec.priority and spec.preemptionPolicy
// when the pod is created, so the scheduler orders and preempts by it.
package priority

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Plugin reads PriorityClasses straight from the store, as the other admission plugins of
// the generic store do. It keeps each class decoded at its last revision: a pod create
// without a class reads them all (for the globalDefault), and decoding them every time
// would put that work on every create.
type Plugin struct {
	store   store.Interface
	classes *registry.Resource

	mu      sync.Mutex
	decoded map[string]decodedClass // by store key
}

type decodedClass struct {
	rev   int64
	class *schedulingv1.PriorityClass
}

// New is the plugin reading PriorityClasses from st.
func New(st store.Interface, reg *registry.Registry) *Plugin {
	classes, _ := reg.Lookup(schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"))
	return &Plugin{store: st, classes: classes, decoded: map[string]decodedClass{}}
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
	class, err := p.resolve(ctx, pod.Spec.PriorityClassName)
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
func (p *Plugin) resolve(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	if name != "" {
		kv, err := p.store.Get(ctx, generic.Key(p.classes, "", name))
		if errors.Is(err, store.ErrNotFound) {
			return nil, apierrors.NewForbidden(corev1.Resource("pods"), "",
				fmt.Errorf("no PriorityClass with name %s was found", name))
		}
		if err != nil {
			return nil, err
		}
		return p.decode(kv)
	}
	kvs, _, err := p.store.List(ctx, generic.ListPrefix(p.classes, ""))
	if err != nil {
		return nil, err
	}
	var def *schedulingv1.PriorityClass
	for _, kv := range kvs {
		pc, err := p.decode(kv)
		if err != nil {
			return nil, err
		}
		if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	return def, nil
}

// decode returns the class stored in kv, decoding it only when its revision is new. The
// classes handed out are shared: callers only read them.
func (p *Plugin) decode(kv store.KV) (*schedulingv1.PriorityClass, error) {
	p.mu.Lock()
	d, ok := p.decoded[kv.Key]
	p.mu.Unlock()
	if ok && d.rev == kv.Revision {
		return d.class, nil
	}
	obj, err := generic.Decode(p.classes, kv.Value, kv.Revision)
	if err != nil {
		return nil, err
	}
	pc := obj.(*schedulingv1.PriorityClass)
	p.mu.Lock()
	p.decoded[kv.Key] = decodedClass{rev: kv.Revision, class: pc}
	p.mu.Unlock()
	return pc, nil
}
