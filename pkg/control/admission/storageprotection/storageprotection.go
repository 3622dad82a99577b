// Package storageprotection is Kubernetes' StorageObjectInUseProtection admission plugin:
// every PersistentVolumeClaim and PersistentVolume is created with the finalizer that keeps
// it while in use (kubernetes.io/pvc-protection, kubernetes.io/pv-protection), which the
// pvc-protection and pv-protection controllers (pkg/control/controllers/volumeprotection)
// remove once nothing uses it, so deleting a claim under a running pod does not take its
// data away.
package storageprotection

import (
	"context"
	"slices"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
)

// The finalizers, as Kubernetes names them.
const (
	PVCFinalizer = "kubernetes.io/pvc-protection"
	PVFinalizer  = "kubernetes.io/pv-protection"
)

// Plugin has no state.
type Plugin struct{}

// Admit adds the finalizer to a claim or volume being created.
func (Plugin) Admit(_ context.Context, a *generic.Attributes) error {
	if a.Operation != generic.Create {
		return nil
	}
	switch {
	case admission.Is(a, "persistentvolumeclaims"):
		if pvc, ok := a.Object.(*corev1.PersistentVolumeClaim); ok && !slices.Contains(pvc.Finalizers, PVCFinalizer) {
			pvc.Finalizers = append(pvc.Finalizers, PVCFinalizer)
		}
	case admission.Is(a, "persistentvolumes"):
		if pv, ok := a.Object.(*corev1.PersistentVolume); ok && !slices.Contains(pv.Finalizers, PVFinalizer) {
			pv.Finalizers = append(pv.Finalizers, PVFinalizer)
		}
	}
	return nil
}
