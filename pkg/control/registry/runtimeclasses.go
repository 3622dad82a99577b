package registry

import (
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RuntimeClasses (node.k8s.io/v1) and CSINodes (storage.k8s.io/v1) are stored and validated
// as kube-apiserver's rules do, so clients and discovery find them; minilet does not act on
// either: it runs every pod with containerd's default handler and registers no CSI drivers.

var runtimeClassRules = Rules{
	Validate: func(obj runtime.Object) field.ErrorList { return validateRuntimeClass(obj.(*nodev1.RuntimeClass)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		rc, o := obj.(*nodev1.RuntimeClass), old.(*nodev1.RuntimeClass)
		return append(validateRuntimeClass(rc), immutable(rc.Handler, o.Handler, field.NewPath("handler"))...)
	},
	Warnings: func(obj runtime.Object) []string {
		rc := obj.(*nodev1.RuntimeClass)
		return []string{fmt.Sprintf("minik8s runs every pod with containerd's default runtime: pods naming RuntimeClass %q do not get its handler %q (its overhead and scheduling apply)", rc.Name, rc.Handler)}
	},
	Table: &TableDef{
		Columns: []metav1.TableColumnDefinition{nameColumn, column("Handler", "string", nodev1.RuntimeClass{}.SwaggerDoc()["handler"], false), ageColumn},
		Row: func(obj runtime.Object) []any {
			rc := obj.(*nodev1.RuntimeClass)
			return []any{rc.Name, rc.Handler, Age(rc.CreationTimestamp)}
		},
	},
}

func validateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	errs := validateMeta(rc, false, validation.NameIsDNSSubdomain)
	errs = append(errs, corevalidation.InvalidEach(field.NewPath("handler"), rc.Handler, utilvalidation.IsDNS1123Label(rc.Handler))...)
	if rc.Overhead != nil {
		errs = append(errs, validateResourceList(rc.Overhead.PodFixed, field.NewPath("overhead", "podFixed"))...)
	}
	if rc.Scheduling != nil {
		errs = append(errs, metav1validation.ValidateLabels(rc.Scheduling.NodeSelector, field.NewPath("scheduling", "nodeSelector"))...)
	}
	return errs
}

// csiNodeIDMaxLength is the longest node ID a CSI driver may report, as in kube v1.36.
const csiNodeIDMaxLength = 256

var csiNodeRules = Rules{
	Validate: func(obj runtime.Object) field.ErrorList { return validateCSINode(obj.(*storagev1.CSINode)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		n, o := obj.(*storagev1.CSINode), old.(*storagev1.CSINode)
		errs := validateCSINode(n)
		was := map[string]storagev1.CSINodeDriver{}
		for _, d := range o.Spec.Drivers {
			was[d.Name] = d
		}
		// A registered driver's identity on the node does not change.
		for i, d := range n.Spec.Drivers {
			if prev, ok := was[d.Name]; ok {
				path := field.NewPath("spec", "drivers").Index(i)
				errs = append(errs, immutable(d.NodeID, prev.NodeID, path.Child("nodeID"))...)
				errs = append(errs, immutable(d.TopologyKeys, prev.TopologyKeys, path.Child("topologyKeys"))...)
			}
		}
		return errs
	},
	Table: &TableDef{
		Columns: []metav1.TableColumnDefinition{nameColumn, integerColumn("Drivers", storagev1.CSINodeSpec{}.SwaggerDoc()["drivers"]), ageColumn},
		Row: func(obj runtime.Object) []any {
			n := obj.(*storagev1.CSINode)
			return []any{n.Name, int64(len(n.Spec.Drivers)), Age(n.CreationTimestamp)}
		},
	},
}

func validateCSINode(n *storagev1.CSINode) field.ErrorList {
	errs := validateMeta(n, false, validation.NameIsDNSSubdomain)
	seen := map[string]bool{}
	for i, d := range n.Spec.Drivers {
		path := field.NewPath("spec", "drivers").Index(i)
		switch {
		case d.Name == "":
			errs = append(errs, field.Required(path.Child("name"), "driver name must not be empty"))
		case seen[d.Name]:
			errs = append(errs, field.Duplicate(path.Child("name"), d.Name))
		default:
			errs = append(errs, corevalidation.InvalidEach(path.Child("name"), d.Name, utilvalidation.IsDNS1123Subdomain(d.Name))...)
		}
		seen[d.Name] = true
		if d.NodeID == "" {
			errs = append(errs, field.Required(path.Child("nodeID"), ""))
		} else if len(d.NodeID) > csiNodeIDMaxLength {
			errs = append(errs, field.Invalid(path.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
		}
		for j, key := range d.TopologyKeys {
			errs = append(errs, corevalidation.InvalidEach(path.Child("topologyKeys").Index(j), key, utilvalidation.IsQualifiedName(key))...)
		}
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			errs = append(errs, nonNegative(d.Allocatable.Count, path.Child("allocatable", "count"))...)
		}
	}
	return errs
}
