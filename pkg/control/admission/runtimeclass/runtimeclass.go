// Package runtimeclass is Kubernetes' RuntimeClass admission plugin: a pod naming a
// RuntimeClass that does not exist is refused, and one that exists gives the pod its
// overhead and its scheduling (node selector and tolerations) when the pod is created.
package runtimeclass

import (
	"context"
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Plugin reads RuntimeClasses through admission.ClusterObjects.
type Plugin struct {
	classes *admission.ClusterObjects[*nodev1.RuntimeClass]
}

// New is the plugin, registering its informer in inf; st answers what the informer lacks.
func New(inf *admission.Informers, st store.Interface, reg *registry.Registry) *Plugin {
	return &Plugin{classes: admission.NewClusterObjects[*nodev1.RuntimeClass](inf, st, reg, nodev1.SchemeGroupVersion.WithResource("runtimeclasses"))}
}

// Admit applies the pod's RuntimeClass to a pod being created, with kube's messages.
func (p *Plugin) Admit(ctx context.Context, a *generic.Attributes) error {
	pod := admission.PodCreate(a)
	if pod == nil || !p.classes.Served() {
		return nil
	}
	forbidden := func(format string, args ...any) error {
		return apierrors.NewForbidden(a.Resource.GroupResource(), pod.Name, fmt.Errorf(format, args...))
	}
	if pod.Spec.RuntimeClassName == nil {
		if pod.Spec.Overhead != nil {
			return forbidden("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
		}
		return nil
	}
	rc, found, err := p.classes.Get(ctx, a, *pod.Spec.RuntimeClassName)
	if err != nil {
		return err
	}
	if !found {
		return forbidden("pod rejected: RuntimeClass %q not found", *pod.Spec.RuntimeClassName)
	}
	switch {
	case rc.Overhead != nil && pod.Spec.Overhead != nil && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead):
		return forbidden("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
	case rc.Overhead != nil:
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	case pod.Spec.Overhead != nil:
		return forbidden("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	if rc.Scheduling == nil {
		return nil
	}
	for key, value := range rc.Scheduling.NodeSelector {
		if have, ok := pod.Spec.NodeSelector[key]; ok && have != value {
			return forbidden("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", key, value, key, have)
		}
	}
	for key, value := range rc.Scheduling.NodeSelector {
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		pod.Spec.NodeSelector[key] = value
	}
	for _, t := range rc.Scheduling.Tolerations {
		if !hasToleration(pod.Spec.Tolerations, t) {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
		}
	}
	return nil
}

func hasToleration(list []corev1.Toleration, t corev1.Toleration) bool {
	for _, have := range list {
		if apiequality.Semantic.DeepEqual(have, t) {
			return true
		}
	}
	return false
}
