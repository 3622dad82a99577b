package core

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/internal/resourcename"
	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/poddefaults"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	"k8s.io/utils/ptr"
)

// betaStorageClassAnnotation is the storage class annotation older clients still set.
const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// betaToGALabel: a volume's node affinity may move from each beta topology label to its GA name.
var betaToGALabel = map[string]string{
	corev1.LabelFailureDomainBetaZone:   corev1.LabelTopologyZone,
	corev1.LabelFailureDomainBetaRegion: corev1.LabelTopologyRegion,
	kubeletapis.LabelOS:                 corev1.LabelOSStable,
	kubeletapis.LabelArch:               corev1.LabelArchStable,
	corev1.LabelInstanceType:            corev1.LabelInstanceTypeStable,
}

// nodeLabelsGoneGA compares node affinities, a requirement on a beta label being equal to
// one on its GA name, as kube's getMaskNodeSelectorLabelChangeEqualities.
var nodeLabelsGoneGA = func() conversion.Equalities {
	eq := equality.Semantic.Copy()
	if err := eq.AddFunc(func(req, old corev1.NodeSelectorRequirement) bool {
		if betaToGALabel[old.Key] == req.Key {
			old.Key = req.Key
		}
		return equality.Semantic.DeepEqual(req, old)
	}); err != nil {
		panic(err)
	}
	return eq
}()

var PersistentVolumeRules = registry.Rules{
	ReturnDeletedObject: true,
	Warnings:            func(obj, _ runtime.Object) []string { return persistentVolumeWarnings(obj.(*corev1.PersistentVolume)) },
	Default: func(obj runtime.Object) {
		pv := obj.(*corev1.PersistentVolume)
		if pv.Status.Phase == "" {
			pv.Status.Phase = corev1.VolumePending
		}
		if pv.Spec.PersistentVolumeReclaimPolicy == "" {
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		}
		registry.DefaultVolumeMode(&pv.Spec.VolumeMode)
		if hp := pv.Spec.HostPath; hp != nil && hp.Type == nil {
			hp.Type = ptr.To(corev1.HostPathUnset)
		}
		poddefaults.ResourceList(pv.Spec.Capacity)
	},
	PrepareCreate: func(obj runtime.Object) {
		now := metav1.Now()
		obj.(*corev1.PersistentVolume).Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &now}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validatePersistentVolume(obj.(*corev1.PersistentVolume))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		pv, o := obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume)
		errs := validatePersistentVolume(pv)
		source := pv.Spec.PersistentVolumeSource.DeepCopy()
		if o.Spec.CSI != nil && o.Spec.CSI.ControllerExpandSecretRef == nil && source.CSI != nil {
			source.CSI.ControllerExpandSecretRef = nil // may be set once
		}
		if !equality.Semantic.DeepEqual(*source, o.Spec.PersistentVolumeSource) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation"))
		}
		// sic: kube's paths of volumeMode and nodeAffinity
		errs = append(errs, registry.Immutable(pv.Spec.VolumeMode, o.Spec.VolumeMode, field.NewPath("volumeMode"))...)
		if o.Spec.NodeAffinity != nil && !nodeLabelsGoneGA.DeepEqual(pv.Spec.NodeAffinity, o.Spec.NodeAffinity) {
			errs = append(errs, field.Invalid(field.NewPath("nodeAffinity"), pv.Spec.NodeAffinity, "field is immutable, except for updating from beta label to GA"))
		}
		if o.Spec.VolumeAttributesClassName != nil && pv.Spec.VolumeAttributesClassName == nil {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
		}
		return errs
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Capacity", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"], false),
			registry.Column("Access Modes", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"], false),
			registry.Column("Reclaim Policy", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"], false),
			registry.Column("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"], false),
			registry.Column("Claim", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"], false),
			registry.Column("StorageClass", "string", "StorageClass of the pv", false),
			registry.Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv", false),
			registry.Column("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"], false),
			registry.AgeColumn,
			registry.Column("VolumeMode", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"], true),
		},
		Row: func(obj runtime.Object) []any {
			pv := obj.(*corev1.PersistentVolume)
			claim := ""
			if ref := pv.Spec.ClaimRef; ref != nil {
				claim = ref.Namespace + "/" + ref.Name
			}
			phase := string(pv.Status.Phase)
			if pv.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			class := pv.Spec.StorageClassName
			if c, ok := pv.Annotations[betaStorageClassAnnotation]; ok {
				class = c
			}
			capacity := pv.Spec.Capacity[corev1.ResourceStorage]
			return []any{pv.Name, capacity.String(), accessModesText(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
				phase, claim, class, registry.StringOr(pv.Spec.VolumeAttributesClassName, "<unset>"), pv.Status.Reason, registry.Age(pv.CreationTimestamp),
				volumeModeText(pv.Spec.VolumeMode)}
		},
	},
}

func validatePersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	errs := registry.ValidateMeta(pv, false, validation.NameIsDNSSubdomain)
	errs = append(errs, corevalidation.ValidatePersistentVolumeSpec(&pv.Spec, false, field.NewPath("spec"))...)
	return append(errs, validateMountOptionAnnotation(pv)...)
}

// validateMountOptionAnnotation is kube's volume plugin check: the deprecated mount options
// annotation only on a volume type that can mount with options (spec.mountOptions is not
// checked, as kube does not).
func validateMountOptionAnnotation(pv *corev1.PersistentVolume) field.ErrorList {
	s := &pv.Spec
	if s.GCEPersistentDisk != nil || s.AWSElasticBlockStore != nil || s.Glusterfs != nil || s.NFS != nil || s.RBD != nil ||
		s.Quobyte != nil || s.ISCSI != nil || s.Cinder != nil || s.CephFS != nil || s.AzureFile != nil || s.VsphereVolume != nil ||
		s.AzureDisk != nil || s.PhotonPersistentDisk != nil {
		return nil
	}
	if _, ok := pv.Annotations[corev1.MountOptionAnnotation]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations", corev1.MountOptionAnnotation), "may not specify mount options for this volume type")}
	}
	return nil
}

var PersistentVolumeClaimRules = registry.Rules{
	ReturnDeletedObject: true,
	// kube's GetWarningsForPersistentVolumeClaim
	Warnings: func(obj, _ runtime.Object) []string {
		pvc := obj.(*corev1.PersistentVolumeClaim)
		var out []string
		if _, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
			out = append(out, fmt.Sprintf(`%s: deprecated since v1.8; use "storageClassName" attribute instead`,
				field.NewPath("metadata", "annotations").Key(corev1.BetaStorageClassAnnotation)))
		}
		return append(out, registry.PVCSpecWarnings(field.NewPath("spec"), pvc.Spec)...)
	},
	Default: func(obj runtime.Object) { poddefaults.Claim(obj.(*corev1.PersistentVolumeClaim)) },
	PrepareCreate: func(obj runtime.Object) {
		obj.(*corev1.PersistentVolumeClaim).Status = corev1.PersistentVolumeClaimStatus{}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		pvc := obj.(*corev1.PersistentVolumeClaim)
		return append(registry.ValidateMeta(pvc, true, validation.NameIsDNSSubdomain), corevalidation.ValidateClaimSpec(&pvc.Spec, field.NewPath("spec"))...)
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		pvc, o := obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim)
		errs := append(registry.ValidateMeta(pvc, true, validation.NameIsDNSSubdomain), corevalidation.ValidateClaimSpec(&pvc.Spec, field.NewPath("spec"))...)
		return append(errs, validateClaimSpecUpdate(pvc, o)...)
	},
	// kube's status strategy checks the status alone; the spec is the stored one.
	SubresourceUpdates: map[string]registry.SubresourceRules{"status": {Validate: validateClaimStatusUpdate}},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Status", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"], false),
			registry.Column("Volume", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"], false),
			registry.Column("Capacity", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"], false),
			registry.Column("Access Modes", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"], false),
			registry.Column("StorageClass", "string", "StorageClass of the pvc", false),
			registry.Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc", false),
			registry.AgeColumn,
			registry.Column("VolumeMode", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"], true),
		},
		Row: func(obj runtime.Object) []any {
			pvc := obj.(*corev1.PersistentVolumeClaim)
			phase := string(pvc.Status.Phase)
			if pvc.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			var capacity, modes string
			if pvc.Spec.VolumeName != "" {
				q := pvc.Status.Capacity[corev1.ResourceStorage]
				capacity, modes = q.String(), accessModesText(pvc.Status.AccessModes)
			}
			class := registry.StringOr(pvc.Spec.StorageClassName, "")
			if c, ok := pvc.Annotations[betaStorageClassAnnotation]; ok {
				class = c
			}
			return []any{pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class,
				registry.StringOr(pvc.Spec.VolumeAttributesClassName, "<unset>"), registry.Age(pvc.CreationTimestamp), volumeModeText(pvc.Spec.VolumeMode)}
		},
	},
}

// validateClaimSpecUpdate is kube-apiserver's check of what changed in a claim's spec: the
// volumeName may be set once, the storageClassName set where there was none (the
// retroactive default class, or the class of the beta annotation), and a bound claim's
// storage request and volumeAttributesClassName changed; a request may shrink only while
// it stays above the capacity (to recover from a failed expansion).
func validateClaimSpecUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	spec := field.NewPath("spec")
	was, is := old.Spec.DeepCopy(), pvc.Spec.DeepCopy()
	if was.VolumeName == "" {
		was.VolumeName = is.VolumeName
	}
	if annotated, ok := old.Annotations[corev1.BetaStorageClassAnnotation]; was.StorageClassName == nil && is.StorageClassName != nil &&
		(!ok || annotated == *is.StorageClassName) {
		was.StorageClassName = is.StorageClassName
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		if is.Resources.Requests != nil {
			is.Resources.Requests[corev1.ResourceStorage] = old.Spec.Resources.Requests[corev1.ResourceStorage]
		}
		is.VolumeAttributesClassName = was.VolumeAttributesClassName
	}
	var errs field.ErrorList
	if !equality.Semantic.DeepEqual(was, is) {
		errs = append(errs, field.Forbidden(spec, "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"+
			diff.Diff(internalClaimSpec(was), internalClaimSpec(is))))
	}
	requested, previous := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if capacity := old.Status.Capacity[corev1.ResourceStorage]; requested.Cmp(previous) < 0 && requested.Cmp(capacity) <= 0 {
		errs = append(errs, field.Forbidden(spec.Child("resources", "requests", "storage"), "field can not be less than status.capacity"))
	}
	errs = append(errs, registry.Immutable(pvc.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...) // sic: kube's path
	if vac := pvc.Spec.VolumeAttributesClassName; old.Status.CurrentVolumeAttributesClassName != nil &&
		!equality.Semantic.DeepEqual(vac, old.Spec.VolumeAttributesClassName) {
		path := spec.Child("volumeAttributesClassName")
		if vac == nil {
			errs = append(errs, field.Forbidden(path, "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil"))
		} else if *vac == "" {
			errs = append(errs, field.Forbidden(path, "update to empty string is forbidden when status.currentVolumeAttributesClassName is not nil"))
		}
	}
	return errs
}

// claimResizeStatuses are the resize statuses kube knows, sorted as its refusal lists them.
var claimResizeStatuses = []corev1.ClaimResourceStatus{corev1.PersistentVolumeClaimControllerResizeInProgress,
	corev1.PersistentVolumeClaimControllerResizeInfeasible, corev1.PersistentVolumeClaimNodeResizeInProgress,
	corev1.PersistentVolumeClaimNodeResizeInfeasible, corev1.PersistentVolumeClaimNodeResizePending}

// validateClaimStatusUpdate is kube's ValidatePersistentVolumeClaimStatusUpdate with
// RecoverVolumeExpansionFailure on (GA and locked in v1.36), in its order and words, the
// entries of each map in their keys' order (kube's is a map's). Its resourceVersion check
// cannot fail here (the stored one is kept), nor its non-negative check of an allocated
// quantity after BasicResource (Value rounds a negative one away from zero, to -1 or less).
func validateClaimStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	var errs field.ErrorList
	if len(pvc.Spec.AccessModes) == 0 {
		errs = append(errs, field.Required(field.NewPath("Spec", "accessModes"), "")) // sic: kube's path
	}
	status := field.NewPath("status")
	for _, name := range slices.Sorted(maps.Keys(pvc.Status.Capacity)) {
		errs = append(errs, corevalidation.BasicResource(pvc.Status.Capacity[name], status.Child("capacity").Key(string(name)))...)
	}
	path := status.Child("allocatedResourceStatuses")
	for _, name := range slices.Sorted(maps.Keys(pvc.Status.AllocatedResourceStatuses)) {
		errs = append(errs, claimResourceKey(name, path)...)
		if !slices.Contains(claimResizeStatuses, pvc.Status.AllocatedResourceStatuses[name]) {
			errs = append(errs, field.NotSupported(path, name, claimResizeStatuses)) // sic: kube names the key
		}
	}
	path = status.Child("allocatedResources")
	for _, name := range slices.Sorted(maps.Keys(pvc.Status.AllocatedResources)) {
		if keyErrs := claimResourceKey(name, path); len(keyErrs) > 0 {
			errs = append(errs, keyErrs...)
			continue
		}
		errs = append(errs, corevalidation.BasicResource(pvc.Status.AllocatedResources[name], path.Key(string(name)))...)
	}
	return errs
}

// claimResourceKey is kube's validatePersistentVolumeClaimResourceKey: a qualified name,
// and storage if it is a native one.
func claimResourceKey(name corev1.ResourceName, path *field.Path) field.ErrorList {
	if msgs := utilvalidation.IsQualifiedName(string(name)); len(msgs) > 0 {
		return corevalidation.InvalidEach(path, string(name), msgs)
	}
	if resourcename.IsNative(name) && name != corev1.ResourceStorage {
		return field.ErrorList{field.NotSupported(path, string(name), []corev1.ResourceName{corev1.ResourceStorage})}
	}
	return nil
}

// internalClaimSpec is a claim's spec as kube-apiserver's internal type has it (Go field
// names, no JSON tags), which is what the diff in its refusal shows.
func internalClaimSpec(s *corev1.PersistentVolumeClaimSpec) any {
	type localRef struct {
		APIGroup   *string
		Kind, Name string
	}
	type ref struct {
		APIGroup   *string
		Kind, Name string
		Namespace  *string
	}
	type resources struct{ Limits, Requests corev1.ResourceList }
	var source *localRef
	if d := s.DataSource; d != nil {
		source = &localRef{d.APIGroup, d.Kind, d.Name}
	}
	var sourceRef *ref
	if d := s.DataSourceRef; d != nil {
		sourceRef = &ref{d.APIGroup, d.Kind, d.Name, d.Namespace}
	}
	return struct {
		AccessModes               []corev1.PersistentVolumeAccessMode
		Selector                  *metav1.LabelSelector
		Resources                 resources
		VolumeName                string
		StorageClassName          *string
		VolumeMode                *corev1.PersistentVolumeMode
		DataSource                *localRef
		DataSourceRef             *ref
		VolumeAttributesClassName *string
	}{s.AccessModes, s.Selector, resources{s.Resources.Limits, s.Resources.Requests}, s.VolumeName, s.StorageClassName, s.VolumeMode,
		source, sourceRef, s.VolumeAttributesClassName}
}

// accessModesText is the ACCESS MODES column: "RWO,ROX,RWX,RWOP" in this order.
func accessModesText(modes []corev1.PersistentVolumeAccessMode) string {
	short := map[corev1.PersistentVolumeAccessMode]string{corev1.ReadWriteOnce: "RWO", corev1.ReadOnlyMany: "ROX", corev1.ReadWriteMany: "RWX", corev1.ReadWriteOncePod: "RWOP"}
	var out []string
	for _, m := range corevalidation.AccessModes {
		if slices.Contains(modes, m) {
			out = append(out, short[m])
		}
	}
	return strings.Join(out, ",")
}

func volumeModeText(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}

// persistentVolumeWarnings is kube's GetWarningsForPersistentVolume, in its order and words.
func persistentVolumeWarnings(pv *corev1.PersistentVolume) []string {
	var out []string
	for _, a := range []struct{ key, msg string }{
		{corev1.BetaStorageClassAnnotation, `deprecated since v1.8; use "storageClassName" attribute instead`},
		{corev1.MountOptionAnnotation, `deprecated since v1.31; use "mountOptions" attribute instead`},
	} {
		if _, ok := pv.Annotations[a.key]; ok {
			out = append(out, fmt.Sprintf("%s: %s", field.NewPath("metadata", "annotations").Key(a.key), a.msg))
		}
	}
	s := &pv.Spec
	if s.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		out = append(out, "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended approach is to use dynamic provisioning.")
	}
	if s.NodeAffinity != nil && s.NodeAffinity.Required != nil {
		terms := field.NewPath("spec", "nodeAffinity", "required", "nodeSelectorTerms")
		for i, term := range s.NodeAffinity.Required.NodeSelectorTerms {
			out = append(out, registry.NodeSelectorTermWarnings(term, false, terms.Index(i))...)
		}
	}
	for _, p := range []struct {
		set        bool
		name, when string
	}{
		{s.CephFS != nil, "cephfs", "deprecated in v1.28, non-functional in v1.31+"},
		{s.PhotonPersistentDisk != nil, "photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"},
		{s.ScaleIO != nil, "scaleIO", "deprecated in v1.16, non-functional in v1.22+"},
		{s.StorageOS != nil, "storageOS", "deprecated in v1.22, non-functional in v1.25+"},
		{s.Glusterfs != nil, "glusterfs", "deprecated in v1.25, non-functional in v1.26+"},
		{s.RBD != nil, "rbd", "deprecated in v1.28, non-functional in v1.31+"},
	} {
		if p.set {
			out = append(out, fmt.Sprintf("spec.%s: %s", p.name, p.when))
		}
	}
	return out
}
