package corevalidation

import (
	"maps"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// reclaimPolicies are a PersistentVolume's, sorted as kube lists them.
var reclaimPolicies = []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain}

// ValidatePersistentVolumeSpec is kube's, in its order: of a PersistentVolume object, or
// (inline) of a volume a pod names inline that was migrated to CSI, which has no capacity,
// claim, node affinity or class of its own. Of the volume sources, those minik8s can mount
// (hostPath, local, nfs, csi) are checked in detail; of any source, only one may be given.
func ValidatePersistentVolumeSpec(s *corev1.PersistentVolumeSpec, inline bool, p *field.Path) field.ErrorList {
	const inlineForbidden = "may not be specified in the context of inline volumes"
	var errs field.ErrorList
	if inline {
		if s.ClaimRef != nil {
			errs = append(errs, field.Forbidden(p.Child("claimRef"), inlineForbidden))
		}
		if len(s.Capacity) != 0 {
			errs = append(errs, field.Forbidden(p.Child("capacity"), inlineForbidden))
		}
		if s.CSI == nil {
			errs = append(errs, field.Required(p.Child("csi"), "has to be specified in the context of inline volumes"))
		}
	}
	errs = append(errs, ValidateAccessModes(s.AccessModes, p.Child("accessModes"))...)
	if !inline {
		errs = append(errs, validateCapacity(s.Capacity, p.Child("capacity"))...)
	}
	if policy := s.PersistentVolumeReclaimPolicy; policy != "" {
		switch {
		case inline && policy != corev1.PersistentVolumeReclaimRetain:
			errs = append(errs, field.Forbidden(p.Child("persistentVolumeReclaimPolicy"), "may only be Retain in the context of inline volumes"))
		case !inline && !slices.Contains(reclaimPolicies, policy):
			errs = append(errs, field.NotSupported(p.Child("persistentVolumeReclaimPolicy"), policy, reclaimPolicies))
		}
	}
	affinity := false
	if na := s.NodeAffinity; na != nil {
		switch {
		case inline:
			errs = append(errs, field.Forbidden(p.Child("nodeAffinity"), inlineForbidden))
		case na.Required == nil:
			affinity = true
			errs = append(errs, field.Required(p.Child("nodeAffinity", "required"), "must specify required node constraints"))
		default:
			affinity = true
			errs = append(errs, ValidateNodeSelector(na.Required, p.Child("nodeAffinity", "required"))...)
		}
	}
	errs = append(errs, validateVolumeSources(s, affinity, p)...)
	if s.HostPath != nil && path.Clean(s.HostPath.Path) == "/" && s.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		errs = append(errs, field.Forbidden(p.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}
	if s.StorageClassName != "" {
		if inline {
			errs = append(errs, field.Forbidden(p.Child("storageClassName"), inlineForbidden))
		} else {
			errs = append(errs, ValidateClassName(s.StorageClassName, p.Child("storageClassName"))...)
		}
	}
	if m := s.VolumeMode; m != nil {
		if inline && *m != corev1.PersistentVolumeFilesystem {
			errs = append(errs, field.Forbidden(p.Child("volumeMode"), "may not specify volumeMode other than Filesystem in the context of inline volumes"))
		} else if !inline {
			errs = append(errs, ValidateVolumeMode(m, p.Child("volumeMode"))...)
		}
	}
	return errs
}

// validateCapacity is kube's: storage alone, as a whole and positive quantity.
func validateCapacity(capacity corev1.ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(capacity) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	if _, ok := capacity[corev1.ResourceStorage]; !ok || len(capacity) > 1 {
		errs = append(errs, field.NotSupported(p, capacity, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	for _, name := range slices.Sorted(maps.Keys(capacity)) { // kube's order is a map's
		q := capacity[name]
		errs = append(errs, BasicResource(q, p.Key(string(name)))...)
		if q.Sign() <= 0 {
			errs = append(errs, field.Invalid(p.Key(string(name)), q.String(), "must be greater than zero"))
		}
	}
	return errs
}

// BasicResource is kube's validateBasicResource: a quantity that is not negative once
// rounded to a whole number (away from zero).
func BasicResource(q resource.Quantity, path *field.Path) field.ErrorList {
	if q.Value() < 0 {
		return field.ErrorList{field.Invalid(path, q.Value(), "must be a valid resource quantity")}
	}
	return nil
}

// validateVolumeSources is kube's walk of a PersistentVolume's sources, in its order: the
// first one given is checked, each after it refused where it is; a local volume needs node
// affinity.
func validateVolumeSources(s *corev1.PersistentVolumeSpec, affinity bool, p *field.Path) field.ErrorList {
	sources := []struct {
		name     string
		given    bool
		validate func(*field.Path) field.ErrorList
	}{
		{"hostPath", s.HostPath != nil, func(p *field.Path) field.ErrorList { return ValidateHostPathSource(s.HostPath, p) }},
		{"gcePersistentDisk", s.GCEPersistentDisk != nil, nil},
		{"awsElasticBlockStore", s.AWSElasticBlockStore != nil, nil},
		{"glusterfs", s.Glusterfs != nil, nil},
		{"flocker", s.Flocker != nil, nil},
		{"nfs", s.NFS != nil, func(p *field.Path) field.ErrorList { return validateNFSSource(s.NFS, p) }},
		{"rbd", s.RBD != nil, nil},
		{"quobyte", s.Quobyte != nil, nil},
		{"cephFS", s.CephFS != nil, nil},
		{"iscsi", s.ISCSI != nil, nil},
		{"cinder", s.Cinder != nil, nil},
		{"fc", s.FC != nil, nil},
		{"flexVolume", s.FlexVolume != nil, nil},
		{"azureFile", s.AzureFile != nil, nil},
		{"vsphereVolume", s.VsphereVolume != nil, nil},
		{"photonPersistentDisk", s.PhotonPersistentDisk != nil, nil},
		{"portworxVolume", s.PortworxVolume != nil, nil},
		{"azureDisk", s.AzureDisk != nil, nil},
		{"scaleIO", s.ScaleIO != nil, nil},
		{"local", s.Local != nil, func(local *field.Path) field.ErrorList {
			errs := validateLocalSource(s.Local, local)
			if !affinity {
				errs = append(errs, field.Required(p.Child("nodeAffinity"), "Local volume requires node affinity"))
			}
			return errs
		}},
		{"storageos", s.StorageOS != nil, nil},
		{"csi", s.CSI != nil, func(p *field.Path) field.ErrorList { return validateCSISource(s.CSI, p) }},
	}
	var errs field.ErrorList
	n := 0
	for _, src := range sources {
		switch {
		case !src.given:
			continue
		case n > 0 && src.name != "flexVolume": // kube counts a flexVolume but never refuses it
			errs = append(errs, field.Forbidden(p.Child(src.name), "may not specify more than 1 volume type"))
			continue
		}
		n++
		if src.validate != nil {
			errs = append(errs, src.validate(p.Child(src.name))...)
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(p, "must specify a volume type"))
	}
	return errs
}

func validateNFSSource(nfs *corev1.NFSVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if nfs.Server == "" {
		errs = append(errs, field.Required(p.Child("server"), ""))
	}
	if nfs.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	if !path.IsAbs(nfs.Path) {
		errs = append(errs, field.Invalid(p.Child("path"), nfs.Path, "must be an absolute path"))
	}
	return errs
}

func validateLocalSource(l *corev1.LocalVolumeSource, p *field.Path) field.ErrorList {
	if l.Path == "" {
		return field.ErrorList{field.Required(p.Child("path"), "")}
	}
	return NoBacksteps(l.Path, p.Child("path"))
}

func validateCSISource(csi *corev1.CSIPersistentVolumeSource, p *field.Path) field.ErrorList {
	errs := ValidateDriverName(csi.Driver, p.Child("driver"))
	if csi.VolumeHandle == "" {
		errs = append(errs, field.Required(p.Child("volumeHandle"), ""))
	}
	for _, ref := range []struct {
		name string
		ref  *corev1.SecretReference
	}{{"controllerPublishSecretRef", csi.ControllerPublishSecretRef}, {"controllerExpandSecretRef", csi.ControllerExpandSecretRef},
		{"nodePublishSecretRef", csi.NodePublishSecretRef}, {"nodeExpandSecretRef", csi.NodeExpandSecretRef}} {
		if ref.ref != nil {
			errs = append(errs, validatePVSecretReference(ref.ref, p.Child(ref.name))...)
		}
	}
	return errs
}

// validatePVSecretReference is kube's: a secret named by its name and namespace.
func validatePVSecretReference(ref *corev1.SecretReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, InvalidEach(p.Child("name"), ref.Name, utilvalidation.IsDNS1123Subdomain(ref.Name))...)
	}
	if ref.Namespace == "" {
		errs = append(errs, field.Required(p.Child("namespace"), ""))
	} else {
		errs = append(errs, DNSLabel(ref.Namespace, p.Child("namespace"))...)
	}
	return errs
}
