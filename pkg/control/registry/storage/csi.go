package storage

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/poddefaults"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CSIDrivers, VolumeAttachments and CSIStorageCapacities (storage.k8s.io/v1) are stored,
// defaulted and validated as kube-apiserver's strategies do, so CSI drivers' deployments and
// the clients that read them find them; minilet mounts no CSI volumes and no controller
// attaches any (a pod with a csi volume is warned of at create).

var CSIDriverRules = registry.Rules{
	ReturnDeletedObject: true,
	Default:             func(obj runtime.Object) { defaultCSIDriver(obj.(*storagev1.CSIDriver)) },
	// preventPodSchedulingIfMissing is behind the VolumeLimitScaling gate, off in v1.36.
	PrepareCreate: func(obj runtime.Object) { obj.(*storagev1.CSIDriver).Spec.PreventPodSchedulingIfMissing = nil },
	PrepareUpdate: func(obj, old runtime.Object) {
		d, o := obj.(*storagev1.CSIDriver), old.(*storagev1.CSIDriver)
		if o.Spec.PreventPodSchedulingIfMissing == nil {
			d.Spec.PreventPodSchedulingIfMissing = nil
		}
		// kube defaults while decoding, before its strategy compares the specs.
		defaultCSIDriver(d)
		if !equality.Semantic.DeepEqual(d.Spec, o.Spec) {
			d.Generation = o.Generation + 1
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		d := obj.(*storagev1.CSIDriver)
		return append(registry.ValidateMeta(d, false, validation.NameIsDNSSubdomain), validateCSIDriverSpec(&d.Spec, field.NewPath("spec"))...)
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		d, o := obj.(*storagev1.CSIDriver), old.(*storagev1.CSIDriver)
		errs := validateCSIDriverSpec(&d.Spec, field.NewPath("spec"))
		// kube's path says "attachedRequired".
		errs = append(errs, registry.Immutable(d.Spec.AttachRequired, o.Spec.AttachRequired, field.NewPath("spec", "attachedRequired"))...)
		return append(errs, registry.Immutable(d.Spec.VolumeLifecycleModes, o.Spec.VolumeLifecycleModes, field.NewPath("spec", "volumeLifecycleModes"))...)
	},
	// An update warns only when it changes the token requests, as kube's does.
	Warnings: func(obj, old runtime.Object) []string {
		s := obj.(*storagev1.CSIDriver).Spec
		if old != nil && equality.Semantic.DeepEqual(s.TokenRequests, old.(*storagev1.CSIDriver).Spec.TokenRequests) {
			return nil
		}
		if len(s.TokenRequests) > 0 && s.ServiceAccountTokenInSecrets == nil {
			return []string{"spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true to prevent possible logging of tokens in volume attributes"}
		}
		return nil
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("AttachRequired", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["attachRequired"], false),
			registry.Column("PodInfoOnMount", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["podInfoOnMount"], false),
			registry.Column("StorageCapacity", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["storageCapacity"], false),
			registry.Column("TokenRequests", "string", storagev1.CSIDriverSpec{}.SwaggerDoc()["tokenRequests"], false),
			registry.Column("RequiresRepublish", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["requiresRepublish"], false),
			registry.Column("Modes", "string", storagev1.CSIDriverSpec{}.SwaggerDoc()["volumeLifecycleModes"], false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			d := obj.(*storagev1.CSIDriver)
			tokens := "<unset>"
			if d.Spec.TokenRequests != nil {
				var audiences []string
				for _, t := range d.Spec.TokenRequests {
					audiences = append(audiences, t.Audience)
				}
				tokens = strings.Join(audiences, ",")
			}
			var modes []string
			for _, m := range d.Spec.VolumeLifecycleModes {
				modes = append(modes, string(m))
			}
			if len(modes) == 0 {
				modes = []string{"<none>"}
			}
			return []any{d.Name, boolOr(d.Spec.AttachRequired, true), boolOr(d.Spec.PodInfoOnMount, false), boolOr(d.Spec.StorageCapacity, false),
				tokens, boolOr(d.Spec.RequiresRepublish, false), strings.Join(modes, ","), registry.Age(d.CreationTimestamp)}
		},
	},
}

// defaultCSIDriver is kube's SetDefaults_CSIDriver with v1.36's gates (SELinuxMount GA).
func defaultCSIDriver(d *storagev1.CSIDriver) {
	s := &d.Spec
	defaultBool(&s.AttachRequired, true)
	defaultBool(&s.PodInfoOnMount, false)
	defaultBool(&s.StorageCapacity, false)
	if s.FSGroupPolicy == nil {
		p := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
		s.FSGroupPolicy = &p
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	defaultBool(&s.RequiresRepublish, false)
	defaultBool(&s.SELinuxMount, false)
}

func defaultBool(p **bool, v bool) {
	if *p == nil {
		*p = &v
	}
}

func boolOr(p *bool, otherwise bool) bool {
	if p == nil {
		return otherwise
	}
	return *p
}

// The shortest and longest token lifetimes a CSI driver may ask for.
const (
	minTokenExpiration = 10 * time.Minute
	maxTokenExpiration = 1 << 32 // seconds
)

func validateCSIDriverSpec(s *storagev1.CSIDriverSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, required := range []struct {
		set  bool
		name string
	}{{s.AttachRequired != nil, "attachedRequired"}, {s.PodInfoOnMount != nil, "podInfoOnMount"},
		{s.StorageCapacity != nil, "storageCapacity"}} {
		if !required.set {
			errs = append(errs, field.Required(path.Child(required.name), ""))
		}
	}
	policies := []storagev1.FSGroupPolicy{storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy}
	if p := s.FSGroupPolicy; p != nil && !slices.Contains(policies, *p) {
		errs = append(errs, field.NotSupported(path.Child("fsGroupPolicy"), p, policies))
	}
	audiences := map[string]bool{}
	for i, t := range s.TokenRequests {
		p := path.Child("tokenRequests").Index(i)
		if audiences[t.Audience] {
			errs = append(errs, field.Duplicate(p.Child("audience"), t.Audience))
			continue
		}
		audiences[t.Audience] = true
		if e := t.ExpirationSeconds; e != nil && *e < int64(minTokenExpiration.Seconds()) {
			errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *e, "may not specify a duration less than 10 minutes"))
		} else if e != nil && *e > maxTokenExpiration {
			errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *e, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	for _, m := range s.VolumeLifecycleModes {
		if m != storagev1.VolumeLifecyclePersistent && m != storagev1.VolumeLifecycleEphemeral {
			errs = append(errs, field.NotSupported(path.Child("volumeLifecycleModes"), m,
				[]string{string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral)}))
		}
	}
	if s.SELinuxMount == nil {
		errs = append(errs, field.Required(path.Child("seLinuxMount"), ""))
	}
	if p := s.NodeAllocatableUpdatePeriodSeconds; p != nil && *p < 10 {
		errs = append(errs, field.Invalid(path.Child("nodeAllocatableUpdatePeriodSeconds"), *p, "must be greater than or equal to 10 seconds"))
	}
	if s.ServiceAccountTokenInSecrets != nil && len(s.TokenRequests) == 0 {
		errs = append(errs, field.Invalid(path.Child("serviceAccountTokenInSecrets"), s.ServiceAccountTokenInSecrets,
			"serviceAccountTokenInSecrets is set but no tokenRequests are specified"))
	}
	return errs
}

// Kubernetes' limits on what an attacher reports.
const (
	maxAttachedVolumeMetadataSize = 256 * 1024
	maxVolumeErrorMessageSize     = 1024
)

var VolumeAttachmentRules = registry.Rules{
	ReturnDeletedObject: true,
	PrepareCreate: func(obj runtime.Object) {
		obj.(*storagev1.VolumeAttachment).Status = storagev1.VolumeAttachmentStatus{}
	},
	Default: func(obj runtime.Object) {
		if spec := obj.(*storagev1.VolumeAttachment).Spec.Source.InlineVolumeSpec; spec != nil {
			poddefaults.ResourceList(spec.Capacity)
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateVolumeAttachment(obj.(*storagev1.VolumeAttachment))
	},
	// Also the status subresource's: kube's status strategy keeps the spec and validates alike.
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		a, o := obj.(*storagev1.VolumeAttachment), old.(*storagev1.VolumeAttachment)
		return append(validateVolumeAttachment(a), registry.Immutable(a.Spec, o.Spec, field.NewPath("spec"))...)
	},
	StatusMetadata: metav1.ResetObjectMetaForStatus,
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
			registry.Column("PV", "string", storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"], false),
			registry.Column("Node", "string", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"], false),
			registry.Column("Attached", "boolean", storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"], false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			a := obj.(*storagev1.VolumeAttachment)
			return []any{a.Name, a.Spec.Attacher, registry.StringOr(a.Spec.Source.PersistentVolumeName, ""), a.Spec.NodeName, a.Status.Attached, registry.Age(a.CreationTimestamp)}
		},
	},
}

func validateVolumeAttachment(a *storagev1.VolumeAttachment) field.ErrorList {
	errs := registry.ValidateMeta(a, false, validation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	errs = append(errs, corevalidation.ValidateDriverName(a.Spec.Attacher, spec.Child("attacher"))...)
	errs = append(errs, validateAttachmentSource(&a.Spec.Source, spec.Child("source"))...)
	errs = append(errs, corevalidation.InvalidEach(spec.Child("nodeName"), a.Spec.NodeName, validation.NameIsDNSSubdomain(a.Spec.NodeName, false))...)
	status := field.NewPath("status")
	size := 0
	for k, v := range a.Status.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachedVolumeMetadataSize {
		errs = append(errs, field.TooLong(status.Child("attachmentMetadata"), "", maxAttachedVolumeMetadataSize))
	}
	errs = append(errs, validateVolumeError(a.Status.AttachError, status.Child("attachError"))...)
	errs = append(errs, validateVolumeError(a.Status.DetachError, status.Child("detachError"))...)
	if pv := a.Spec.Source.PersistentVolumeName; pv != nil {
		errs = append(errs, corevalidation.InvalidEach(field.NewPath("spec.source.persistentVolumeName"), *pv, validation.NameIsDNSSubdomain(*pv, false))...)
	}
	return errs
}

func validateAttachmentSource(s *storagev1.VolumeAttachmentSource, path *field.Path) field.ErrorList {
	const exactlyOne = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
	switch {
	case s.InlineVolumeSpec == nil && s.PersistentVolumeName == nil:
		return field.ErrorList{field.Required(path, exactlyOne)}
	case s.InlineVolumeSpec != nil && s.PersistentVolumeName != nil:
		return field.ErrorList{field.Forbidden(path, exactlyOne)}
	case s.PersistentVolumeName != nil && *s.PersistentVolumeName == "":
		return field.ErrorList{field.Required(path.Child("persistentVolumeName"), "must specify non empty persistentVolumeName")}
	case s.InlineVolumeSpec != nil:
		return corevalidation.ValidatePersistentVolumeSpec(s.InlineVolumeSpec, true, path.Child("inlineVolumeSpec"))
	}
	return nil
}

func validateVolumeError(e *storagev1.VolumeError, path *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	if len(e.Message) > maxVolumeErrorMessageSize {
		// kube names the metadata's limit here, not the message's.
		errs = append(errs, field.TooLong(path.Child("message"), "", maxAttachedVolumeMetadataSize))
	}
	if c := e.ErrorCode; c != nil && *c < 0 {
		errs = append(errs, field.Invalid(path.Child("errorCode"), *c, utilvalidation.InclusiveRangeError(0, math.MaxInt32)))
	}
	return errs
}

var CSIStorageCapacityRules = registry.Rules{
	Warnings: func(obj, _ runtime.Object) []string {
		return registry.NodeSelectorWarnings(obj.(*storagev1.CSIStorageCapacity).NodeTopology, field.NewPath("nodeTopology"))
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateCSIStorageCapacity(obj.(*storagev1.CSIStorageCapacity), false)
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		c, o := obj.(*storagev1.CSIStorageCapacity), old.(*storagev1.CSIStorageCapacity)
		// A selector stored before label values were checked may stay.
		wasInvalid := len(metav1validation.ValidateLabelSelector(o.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0
		errs := validateCSIStorageCapacity(c, wasInvalid)
		// What the driver's GetCapacity was asked does not change.
		if !equality.Semantic.DeepEqual(c.NodeTopology, o.NodeTopology) {
			errs = append(errs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, "field is immutable"))
		}
		if c.StorageClassName != o.StorageClassName {
			errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, "field is immutable"))
		}
		return errs
	},
	// kube's table has no Age column for these.
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("StorageClassName", "string", storagev1.CSIStorageCapacity{}.SwaggerDoc()["storageClassName"], false),
			registry.Column("Capacity", "string", storagev1.CSIStorageCapacity{}.SwaggerDoc()["capacity"], false),
		},
		Row: func(obj runtime.Object) []any {
			c := obj.(*storagev1.CSIStorageCapacity)
			capacity := "<unset>"
			if c.Capacity != nil {
				capacity = c.Capacity.String()
			}
			return []any{c.Name, c.StorageClassName, capacity}
		},
	},
}

func validateCSIStorageCapacity(c *storagev1.CSIStorageCapacity, allowInvalidLabelValues bool) field.ErrorList {
	errs := registry.ValidateMeta(c, true, validation.NameIsDNSSubdomain)
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValues}
	errs = append(errs, metav1validation.ValidateLabelSelector(c.NodeTopology, opts, field.NewPath("nodeTopology"))...)
	errs = append(errs, corevalidation.ValidateClassName(c.StorageClassName, field.NewPath("storageClassName"))...)
	if c.Capacity != nil && c.Capacity.Sign() < 0 {
		errs = append(errs, field.Invalid(field.NewPath("capacity"), c.Capacity.String(), validation.IsNegativeErrorMsg))
	}
	return errs
}

// CSINodes are stored and validated as kube-apiserver's rules do, so clients and discovery
// find them; minilet registers no CSI drivers.

// csiNodeIDMaxLength is the longest node ID a CSI driver may report, as in kube v1.36.
const csiNodeIDMaxLength = 256

var CSINodeRules = registry.Rules{
	ReturnDeletedObject: true,
	Validate:            func(obj runtime.Object) field.ErrorList { return validateCSINode(obj.(*storagev1.CSINode)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		n, o := obj.(*storagev1.CSINode), old.(*storagev1.CSINode)
		errs := validateCSINode(n)
		// A registered driver does not change but for its allocatable count; kube names
		// the whole driver, as its internal type prints.
		for _, od := range o.Spec.Drivers {
			for _, d := range n.Spec.Drivers {
				if d.Name == od.Name {
					d.Allocatable, od.Allocatable = nil, nil
					errs = append(errs, registry.Immutable(registry.GoNamed{V: d}, registry.GoNamed{V: od}, field.NewPath("spec", "drivers"))...)
				}
			}
		}
		return errs
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{registry.NameColumn, registry.IntegerColumn("Drivers", storagev1.CSINodeSpec{}.SwaggerDoc()["drivers"]), registry.AgeColumn},
		Row: func(obj runtime.Object) []any {
			n := obj.(*storagev1.CSINode)
			return []any{n.Name, int64(len(n.Spec.Drivers)), registry.Age(n.CreationTimestamp)}
		},
	},
}

// validateCSINode is kube's ValidateCSINode: in its order, and with its paths (a topology
// key's errors name the driver).
func validateCSINode(n *storagev1.CSINode) field.ErrorList {
	errs := registry.ValidateMeta(n, false, validation.NameIsDNSSubdomain)
	names := sets.New[string]()
	for i, d := range n.Spec.Drivers {
		path := field.NewPath("spec", "drivers").Index(i)
		errs = append(errs, corevalidation.ValidateDriverName(d.Name, path.Child("name"))...)
		if d.NodeID == "" {
			errs = append(errs, field.Required(path.Child("nodeID"), ""))
		}
		if len(d.NodeID) > csiNodeIDMaxLength {
			errs = append(errs, field.Invalid(path.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
		}
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			errs = append(errs, registry.NonNegative(d.Allocatable.Count, path.Child("allocatable", "count"))...)
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Duplicate(path.Child("name"), d.Name))
		}
		names.Insert(d.Name)
		keys := sets.New[string]()
		for _, key := range d.TopologyKeys {
			if key == "" {
				errs = append(errs, field.Required(path, ""))
			}
			if keys.Has(key) {
				errs = append(errs, field.Duplicate(path, key))
			}
			keys.Insert(key)
			errs = append(errs, corevalidation.InvalidEach(path, key, utilvalidation.IsQualifiedName(key))...)
		}
	}
	return errs
}
