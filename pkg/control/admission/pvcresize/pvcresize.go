// Package pvcresize is Kubernetes' PersistentVolumeClaimResize admission plugin: a claim's
// storage request may grow only once it is bound, and only when its StorageClass (the same
// before and after) sets allowVolumeExpansion: true.
package pvcresize

import (
	"context"
	"errors"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// Plugin reads the classes from the admission informers.
type Plugin struct {
	classes admission.StorageClasses
}

// New is the plugin, registering its informer in inf.
func New(inf *admission.Informers) *Plugin {
	return &Plugin{classes: admission.NewStorageClasses(inf)}
}

// Validate refuses growing a claim that is not bound or whose class does not allow it.
func (p *Plugin) Validate(ctx context.Context, a *generic.Attributes) error {
	if a.Operation != generic.Update || !admission.Is(a, "persistentvolumeclaims") {
		return nil
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	old, oldOK := a.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok || !oldOK {
		return nil
	}
	size, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.Cmp(oldSize) <= 0 {
		return nil
	}
	if old.Status.Phase != corev1.ClaimBound {
		return admission.Forbidden(a, errors.New("Only bound persistent volume claims can be expanded"))
	}
	if ready, err := p.classes.Wait(ctx, a); !ready {
		return err
	}
	if !p.allowResize(pvc, old) {
		return admission.Forbidden(a, errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	}
	return nil
}

// allowResize says whether the claim's class, unchanged by the update, allows expansion.
func (p *Plugin) allowResize(pvc, old *corev1.PersistentVolumeClaim) bool {
	class := storagehelpers.GetPersistentVolumeClaimClass(pvc)
	if class == "" || class != storagehelpers.GetPersistentVolumeClaimClass(old) {
		return false
	}
	sc, err := p.classes.Get(class)
	return err == nil && sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
}
