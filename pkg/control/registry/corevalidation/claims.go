package corevalidation

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AccessModes are the access modes in the order kubectl's columns abbreviate them
// (RWO,ROX,RWX,RWOP).
var AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod}

func ValidateClaimSpec(s *corev1.PersistentVolumeClaimSpec, spec *field.Path) field.ErrorList {
	errs := ValidateAccessModes(s.AccessModes, spec.Child("accessModes"))
	storage := spec.Child("resources").Key(string(corev1.ResourceStorage)) // kube's path for the request
	if q, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storage, ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, field.Invalid(storage, q.String(), "must be greater than zero"))
	}
	errs = append(errs, ValidateVolumeMode(s.VolumeMode, spec.Child("volumeMode"))...)
	if c := s.StorageClassName; c != nil && *c != "" {
		errs = append(errs, ValidateClassName(*c, spec.Child("storageClassName"))...)
	}
	return errs
}

func ValidateAccessModes(modes []corev1.PersistentVolumeAccessMode, path *field.Path) field.ErrorList {
	if len(modes) == 0 {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, m := range modes {
		if !slices.Contains(AccessModes, m) {
			errs = append(errs, field.NotSupported(path, m, slices.Sorted(slices.Values(AccessModes)))) // kube names them sorted
		}
	}
	// kube's: ReadWriteOncePod beside another mode it supports.
	if slices.Contains(modes, corev1.ReadWriteOncePod) && slices.ContainsFunc(modes, func(m corev1.PersistentVolumeAccessMode) bool {
		return m != corev1.ReadWriteOncePod && slices.Contains(AccessModes, m)
	}) {
		errs = append(errs, field.Forbidden(path, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

func ValidateVolumeMode(m *corev1.PersistentVolumeMode, path *field.Path) field.ErrorList {
	modes := []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}
	if m != nil && !slices.Contains(modes, *m) {
		return field.ErrorList{field.NotSupported(path, *m, modes)}
	}
	return nil
}

func ValidateClassName(name string, path *field.Path) field.ErrorList {
	return InvalidEach(path, name, validation.NameIsDNSSubdomain(name, false))
}
