package pvbinder

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
)

// mismatch is why a volume cannot serve a claim, in the words of Kubernetes' binder
// (checkVolumeSatisfyClaim): being deleted, too small, another class, attributes class or
// volume mode, or not every access mode the claim asks for; nil when it can.
func mismatch(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) error {
	requested, size := pvc.Spec.Resources.Requests[corev1.ResourceStorage], pv.Spec.Capacity[corev1.ResourceStorage]
	switch {
	case pv.DeletionTimestamp != nil:
		return fmt.Errorf("the volume is marked for deletion %q", pv.Name)
	case size.Cmp(requested) < 0:
		return errors.New("requested PV is too small")
	case storagehelpers.GetPersistentVolumeClass(pv) != storagehelpers.GetPersistentVolumeClaimClass(pvc):
		return errors.New("storageClassName does not match")
	case ptr.Deref(pv.Spec.VolumeAttributesClassName, "") != ptr.Deref(pvc.Spec.VolumeAttributesClassName, ""):
		return errors.New("volumeAttributesClassName does not match")
	case storagehelpers.CheckVolumeModeMismatches(&pvc.Spec, &pv.Spec):
		return errors.New("incompatible volumeMode")
	case !storagehelpers.CheckAccessModes(pvc, pv):
		return errors.New("incompatible accessMode")
	}
	return nil
}

// fits says whether a volume can serve a claim that names none: no mismatch, and labels
// the claim's selector accepts.
func fits(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) bool {
	if mismatch(pv, pvc) != nil {
		return false
	}
	if pvc.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(pvc.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pv.Labels)) {
			return false
		}
	}
	return true
}

// bestVolume is the volume pre-bound to the claim if one fits, else the smallest available
// volume that fits.
func bestVolume(pvs []*corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	var best *corev1.PersistentVolume
	for _, pv := range pvs {
		if !fits(pv, pvc) {
			continue
		}
		if storagehelpers.IsVolumeBoundToClaim(pv, pvc) {
			return pv
		}
		if pv.Spec.ClaimRef != nil || pv.Status.Phase != corev1.VolumeAvailable {
			continue
		}
		if best == nil {
			best = pv
			continue
		}
		a, b := pv.Spec.Capacity[corev1.ResourceStorage], best.Spec.Capacity[corev1.ResourceStorage]
		if a.Cmp(b) < 0 {
			best = pv
		}
	}
	return best
}
