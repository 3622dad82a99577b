// Package defaultstorageclass is Kubernetes' DefaultStorageClass admission plugin: a
// PersistentVolumeClaim created without a storage class gets the class annotated
// storageclass.kubernetes.io/is-default-class=true (the newest one when several are), so
// a plain claim is provisioned as on kind, minikube or k3s. A claim that names a class,
// even "", keeps it.
package defaultstorageclass

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/registry/storage"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Plugin reads the classes from the admission informers.
type Plugin struct {
	classes admission.StorageClasses
}

// New is the plugin, registering its informer in inf.
func New(inf *admission.Informers) *Plugin {
	return &Plugin{classes: admission.NewStorageClasses(inf)}
}

// Admit sets the default class on a claim being created without one.
func (p *Plugin) Admit(ctx context.Context, a *generic.Attributes) error {
	if a.Operation != generic.Create || !admission.Is(a, "persistentvolumeclaims") {
		return nil
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok || pvc.Spec.StorageClassName != nil || pvc.Annotations[corev1.BetaStorageClassAnnotation] != "" {
		return nil
	}
	if ready, err := p.classes.Wait(ctx, a); !ready {
		return err
	}
	classes, err := p.classes.List(labels.Everything())
	if err != nil {
		return admission.Forbidden(a, err)
	}
	if def := Default(classes); def != nil {
		pvc.Spec.StorageClassName = &def.Name
	}
	return nil
}

// Default is the class a claim without one gets: of those marked default, the newest
// (then the first by name), as Kubernetes chooses since 1.26; nil when none is marked.
func Default(classes []*storagev1.StorageClass) *storagev1.StorageClass {
	return admission.NewestDefault(classes, storage.IsDefaultStorageClass)
}
