// Package storage holds the rules of the storage.k8s.io/v1 kinds: StorageClasses,
// VolumeAttributesClasses, CSIDrivers, CSINodes, CSIStorageCapacities and
// VolumeAttachments, as Kubernetes' pkg/registry/storage has them.
package storage

import (
	"fmt"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"
	corev1 "k8s.io/api/core/v1"
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

// IsDefaultStorageClassAnnotation marks the class a claim without one gets (the
// DefaultStorageClass admission plugin); the beta spelling is still honoured, as upstream.
const (
	IsDefaultStorageClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	BetaIsDefaultStorageClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// IsDefaultStorageClass tells whether the class is marked default.
func IsDefaultStorageClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations[IsDefaultStorageClassAnnotation] == "true" || sc.Annotations[BetaIsDefaultStorageClassAnnotation] == "true"
}

// Kubernetes' limits on a class's parameters.
const (
	maxProvisionerParameterSize = 256 * 1024
	maxProvisionerParameterLen  = 512
)

var StorageClassRules = registry.Rules{
	ReturnDeletedObject: true,
	// kube's GetWarningsForStorageClass: deprecated node labels in allowedTopologies.
	Warnings: func(obj, _ runtime.Object) []string {
		var out []string
		for i, topo := range obj.(*storagev1.StorageClass).AllowedTopologies {
			for j, expr := range topo.MatchLabelExpressions {
				if msg, deprecated := registry.NodeLabelDeprecatedMessage(expr.Key); deprecated {
					out = append(out, fmt.Sprintf("%s: %s", field.NewPath("allowedTopologies").Index(i).Child("matchLabelExpressions").Index(j).Child("key"), msg))
				}
			}
		}
		return out
	},
	Default: func(obj runtime.Object) {
		sc := obj.(*storagev1.StorageClass)
		if sc.ReclaimPolicy == nil {
			p := corev1.PersistentVolumeReclaimDelete
			sc.ReclaimPolicy = &p
		}
		if sc.VolumeBindingMode == nil {
			m := storagev1.VolumeBindingImmediate
			sc.VolumeBindingMode = &m
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateStorageClass(obj.(*storagev1.StorageClass))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		sc, o := obj.(*storagev1.StorageClass), old.(*storagev1.StorageClass)
		errs := validateStorageClass(sc)
		errs = append(errs, registry.Immutable(sc.Parameters, o.Parameters, field.NewPath("parameters"))...)
		errs = append(errs, registry.Immutable(sc.Provisioner, o.Provisioner, field.NewPath("provisioner"))...)
		errs = append(errs, registry.Immutable(sc.ReclaimPolicy, o.ReclaimPolicy, field.NewPath("reclaimPolicy"))...)
		return append(errs, registry.Immutable(sc.VolumeBindingMode, o.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Provisioner", "string", storagev1.StorageClass{}.SwaggerDoc()["provisioner"], false),
			registry.Column("ReclaimPolicy", "string", storagev1.StorageClass{}.SwaggerDoc()["reclaimPolicy"], false),
			registry.Column("VolumeBindingMode", "string", storagev1.StorageClass{}.SwaggerDoc()["volumeBindingMode"], false),
			registry.Column("AllowVolumeExpansion", "string", storagev1.StorageClass{}.SwaggerDoc()["allowVolumeExpansion"], false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			sc := obj.(*storagev1.StorageClass)
			name := sc.Name
			if IsDefaultStorageClass(sc) {
				name += " (default)" // kube-apiserver's printer marks it so
			}
			policy, mode := "Delete", "Immediate"
			if sc.ReclaimPolicy != nil {
				policy = string(*sc.ReclaimPolicy)
			}
			if sc.VolumeBindingMode != nil {
				mode = string(*sc.VolumeBindingMode)
			}
			expansion := false
			if sc.AllowVolumeExpansion != nil {
				expansion = *sc.AllowVolumeExpansion
			}
			return []any{name, sc.Provisioner, policy, mode, fmt.Sprint(expansion), registry.Age(sc.CreationTimestamp)}
		},
	},
}

func validateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	errs := registry.ValidateMeta(sc, false, validation.NameIsDNSSubdomain)
	errs = append(errs, validateProvisioner(sc.Provisioner, field.NewPath("provisioner"))...)
	errs = append(errs, validateParameters(sc.Parameters, true, field.NewPath("parameters"))...)
	policies := []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain}
	if r := sc.ReclaimPolicy; r != nil && *r != policies[0] && *r != policies[1] {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *r, policies))
	}
	modes := []storagev1.VolumeBindingMode{storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer}
	if m := sc.VolumeBindingMode; m == nil {
		errs = append(errs, field.Required(field.NewPath("volumeBindingMode"), ""))
	} else if *m != modes[0] && *m != modes[1] {
		errs = append(errs, field.NotSupported(field.NewPath("volumeBindingMode"), *m, modes))
	}
	return append(errs, validateAllowedTopologies(sc.AllowedTopologies, field.NewPath("allowedTopologies"))...)
}

// validateAllowedTopologies is kube's: each term's requirements name a label key once,
// with values given once each, and no term repeats another. As kube's, the comparison
// starts from one empty term per term given, so a term with no requirements is reported a
// duplicate of each.
func validateAllowedTopologies(terms []corev1.TopologySelectorTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make([]map[string]sets.Set[string], len(terms))
	for i, term := range terms {
		exprs, termErrs := topologyTermValues(term, path.Index(i).Child("matchLabelExpressions"))
		errs = append(errs, termErrs...)
		for _, other := range seen {
			if equality.Semantic.DeepEqual(exprs, other) {
				errs = append(errs, field.Duplicate(path.Index(i).Child("matchLabelExpressions"), ""))
			}
		}
		seen = append(seen, exprs)
	}
	return errs
}

// topologyTermValues reads a topology term as kube's ValidateTopologySelectorTerm: its
// values by key, and the errors of its requirements.
func topologyTermValues(term corev1.TopologySelectorTerm, path *field.Path) (map[string]sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	out := map[string]sets.Set[string]{}
	for i, req := range term.MatchLabelExpressions {
		p := path.Index(i)
		values := sets.New[string]()
		if len(req.Values) == 0 {
			errs = append(errs, field.Required(p.Child("values"), ""))
		}
		for j, v := range req.Values {
			if values.Has(v) {
				errs = append(errs, field.Duplicate(p.Child("values").Index(j), v))
			}
			values.Insert(v)
		}
		errs = append(errs, metav1validation.ValidateLabelName(req.Key, p.Child("key"))...)
		if _, dup := out[req.Key]; dup {
			errs = append(errs, field.Duplicate(p.Child("key"), req.Key))
		}
		out[req.Key] = values
	}
	return out, errs
}

// validateProvisioner is kube's check of a StorageClass's provisioner and a
// VolumeAttributesClass's driverName.
func validateProvisioner(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	lower := strings.ToLower(name) // kube checks, and names, the lowercase form
	errs = append(errs, corevalidation.InvalidEach(path, lower, utilvalidation.IsQualifiedName(lower))...)
	return errs
}

// validateParameters is kube's check of the parameters a class passes to its driver.
func validateParameters(params map[string]string, allowEmpty bool, path *field.Path) field.ErrorList {
	if len(params) > maxProvisionerParameterLen {
		return field.ErrorList{field.TooLong(path, "", maxProvisionerParameterLen)}
	}
	var errs field.ErrorList
	size := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(path, k, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > maxProvisionerParameterSize {
		errs = append(errs, field.TooLong(path, "", maxProvisionerParameterSize))
	}
	if !allowEmpty && len(params) == 0 {
		errs = append(errs, field.Required(path, "must contain at least one key/value pair"))
	}
	return errs
}

var VolumeAttributesClassRules = registry.Rules{
	ReturnDeletedObject: true,
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateVolumeAttributesClass(obj.(*storagev1.VolumeAttributesClass))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		c, o := obj.(*storagev1.VolumeAttributesClass), old.(*storagev1.VolumeAttributesClass)
		var errs field.ErrorList
		if c.DriverName != o.DriverName {
			errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
		}
		if !equality.Semantic.DeepEqual(c.Parameters, o.Parameters) {
			errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
		}
		return append(errs, validateVolumeAttributesClass(c)...)
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn, registry.Column("DriverName", "string", storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"], false), registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			c := obj.(*storagev1.VolumeAttributesClass)
			return []any{c.Name, c.DriverName, registry.Age(c.CreationTimestamp)}
		},
	},
}

func validateVolumeAttributesClass(c *storagev1.VolumeAttributesClass) field.ErrorList {
	errs := registry.ValidateMeta(c, false, validation.NameIsDNSSubdomain)
	errs = append(errs, validateProvisioner(c.DriverName, field.NewPath("driverName"))...)
	return append(errs, validateParameters(c.Parameters, false, field.NewPath("parameters"))...)
}
