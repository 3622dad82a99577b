package pvbinder

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// claimClass is the claim's storage class; no class means "" as for a volume.
func claimClass(pvc *corev1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

func volumeMode(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
	if m == nil {
		return corev1.PersistentVolumeFilesystem
	}
	return *m
}

// preBoundTo says whether a volume's claimRef names this claim (an admin's pre-binding).
func preBoundTo(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) bool {
	r := pv.Spec.ClaimRef
	return r != nil && r.Name == pvc.Name && r.Namespace == pvc.Namespace && (r.UID == "" || r.UID == pvc.UID)
}

// fits says whether a volume can serve a claim: same class and volume mode, every access
// mode the claim asks for, enough capacity, and labels the claim's selector accepts.
func fits(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) bool {
	if pv.Spec.StorageClassName != claimClass(pvc) || volumeMode(pv.Spec.VolumeMode) != volumeMode(pvc.Spec.VolumeMode) {
		return false
	}
	for _, m := range pvc.Spec.AccessModes {
		if !slices.Contains(pv.Spec.AccessModes, m) {
			return false
		}
	}
	if want, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		have := pv.Spec.Capacity[corev1.ResourceStorage]
		if have.Cmp(want) < 0 {
			return false
		}
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
		if pv.DeletionTimestamp != nil || !fits(pv, pvc) {
			continue
		}
		if preBoundTo(pv, pvc) {
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
