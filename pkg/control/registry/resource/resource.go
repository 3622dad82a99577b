// Package resource holds the rules of the resource.k8s.io/v1 kinds of dynamic resource
// allocation: DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices, as
// Kubernetes' pkg/registry/resource has them.
package resource

import (
	"fmt"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/internal/resourcename"
	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The resource.k8s.io/v1 kinds of Dynamic Resource Allocation are stored and validated as
// kube-apiserver's rules do (pkg/apis/resource/validation and the strategies of
// pkg/registry/resource), so that clients, drivers and the conformance CRUD tests find
// them. The resourceclaim controller makes pods' template claims; nothing else acts on
// them: no driver publishes ResourceSlices, nothing allocates a claim, and the scheduler
// leaves a pod naming one pending.

var DeviceClassRules = registry.Rules{
	ReturnDeletedObject: true,
	Generation:          true,
	Validate:            func(obj runtime.Object) field.ErrorList { return validateDeviceClass(obj.(*resourcev1.DeviceClass)) },
	Table:               registry.DefaultTable, // kubectl shows NAME AGE
}

func validateDeviceClass(c *resourcev1.DeviceClass) field.ErrorList {
	errs := registry.ValidateMeta(c, false, validation.NameIsDNSSubdomain)
	errs = append(errs, validateDeviceSelectors(c.Spec.Selectors, field.NewPath("spec", "selectors"))...)
	errs = append(errs, validateDeviceConfigs(len(c.Spec.Config), func(i int) resourcev1.DeviceConfiguration { return c.Spec.Config[i].DeviceConfiguration },
		field.NewPath("spec", "config"))...)
	if name := c.Spec.ExtendedResourceName; name != nil && !resourcename.IsExtended(corev1.ResourceName(*name)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "extendedResourceName"), *name, "must be a valid extended resource name"))
	}
	return errs
}

var ResourceClaimRules = registry.Rules{
	ReturnDeletedObject: true,
	Default:             func(obj runtime.Object) { defaultDeviceClaim(&obj.(*resourcev1.ResourceClaim).Spec.Devices) },
	PrepareCreate: func(obj runtime.Object) {
		obj.(*resourcev1.ResourceClaim).Status = resourcev1.ResourceClaimStatus{}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		c := obj.(*resourcev1.ResourceClaim)
		return append(registry.ValidateMeta(c, true, validation.NameIsDNSSubdomain), validateDeviceClaim(&c.Spec.Devices, field.NewPath("spec", "devices"))...)
	},
	// The spec is immutable (kube only checks that on update); the status, written through
	// the status subresource, is checked as kube's ValidateResourceClaimStatusUpdate does.
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		c, o := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
		errs := registry.ValidateMeta(c, true, validation.NameIsDNSSubdomain)
		errs = append(errs, registry.Immutable(c.Spec, o.Spec, field.NewPath("spec"))...)
		return append(errs, validateResourceClaimStatus(c, o)...)
	},
	StatusMetadata: metav1.ResetObjectMetaForStatus,
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{registry.NameColumn,
			registry.Column("State", "string", "A summary of the current state (allocated, pending, reserved, etc.).", false), registry.AgeColumn},
		Row: func(obj runtime.Object) []any {
			c := obj.(*resourcev1.ResourceClaim)
			return []any{c.Name, resourceClaimState(c), registry.Age(c.CreationTimestamp)}
		},
	},
}

// resourceClaimState is kubectl's STATE column (kube's printers.resourceClaimState).
func resourceClaimState(c *resourcev1.ResourceClaim) string {
	var states []string
	if c.DeletionTimestamp != nil {
		states = append(states, "deleted")
	}
	switch {
	case c.Status.Allocation != nil:
		states = append(states, "allocated")
		if len(c.Status.ReservedFor) > 0 {
			states = append(states, "reserved")
		}
	case c.DeletionTimestamp == nil:
		states = append(states, "pending")
	}
	return strings.Join(states, ",")
}

func validateResourceClaimStatus(c, old *resourcev1.ResourceClaim) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("status")
	seen := map[string]bool{}
	for i, ref := range c.Status.ReservedFor {
		p := path.Child("reservedFor").Index(i)
		for name, v := range map[string]string{"resource": ref.Resource, "name": ref.Name, "uid": string(ref.UID)} {
			if v == "" {
				errs = append(errs, field.Required(p.Child(name), ""))
			}
		}
		if ref.UID != "" && seen[string(ref.UID)] {
			errs = append(errs, field.Duplicate(p, ref))
		}
		seen[string(ref.UID)] = true
	}
	if len(c.Status.ReservedFor) > resourcev1.ResourceClaimReservedForMaxSize {
		errs = append(errs, field.TooMany(path.Child("reservedFor"), len(c.Status.ReservedFor), resourcev1.ResourceClaimReservedForMaxSize))
	}
	if len(c.Status.ReservedFor) > 0 && c.Status.Allocation == nil {
		errs = append(errs, field.Forbidden(path.Child("reservedFor"), "may not be specified when `allocated` is not set"))
	}
	// A populated allocation does not change; only deallocation (setting it to nil) may.
	if old.Status.Allocation != nil && c.Status.Allocation != nil {
		errs = append(errs, registry.Immutable(c.Status.Allocation, old.Status.Allocation, path.Child("allocation"))...)
	}
	return errs
}

var ResourceClaimTemplateRules = registry.Rules{
	ReturnDeletedObject: true,
	Default: func(obj runtime.Object) {
		defaultDeviceClaim(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec.Devices)
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		t := obj.(*resourcev1.ResourceClaimTemplate)
		errs := registry.ValidateMeta(t, true, validation.NameIsDNSSubdomain)
		return append(errs, validateDeviceClaim(&t.Spec.Spec.Devices, field.NewPath("spec", "spec", "devices"))...)
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		t, o := obj.(*resourcev1.ResourceClaimTemplate), old.(*resourcev1.ResourceClaimTemplate)
		return registry.Immutable(t.Spec, o.Spec, field.NewPath("spec"))
	},
	Table: registry.DefaultTable, // kubectl shows NAME AGE
}

// defaultDeviceClaim is kube's v1 defaulting of requests: one device unless told otherwise.
func defaultDeviceClaim(claim *resourcev1.DeviceClaim) {
	def := func(mode *resourcev1.DeviceAllocationMode, count *int64) {
		if *mode == "" {
			*mode = resourcev1.DeviceAllocationModeExactCount
		}
		if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
			*count = 1
		}
	}
	for i := range claim.Requests {
		r := &claim.Requests[i]
		if r.Exactly != nil {
			def(&r.Exactly.AllocationMode, &r.Exactly.Count)
		}
		for j := range r.FirstAvailable {
			def(&r.FirstAvailable[j].AllocationMode, &r.FirstAvailable[j].Count)
		}
	}
}

func validateDeviceClaim(claim *resourcev1.DeviceClaim, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	reqs := path.Child("requests")
	if len(claim.Requests) > resourcev1.DeviceRequestsMaxSize {
		errs = append(errs, field.TooMany(reqs, len(claim.Requests), resourcev1.DeviceRequestsMaxSize))
	}
	for i, r := range claim.Requests {
		p := reqs.Index(i)
		if names[r.Name] {
			errs = append(errs, field.Duplicate(p, r.Name))
		}
		names[r.Name] = true
		errs = append(errs, validateDeviceRequest(r, p)...)
	}
	// Constraints and configs name requests (or request/subrequest) of this claim.
	known := func(name string, p *field.Path) field.ErrorList {
		if names[name] || names[strings.Split(name, "/")[0]] && strings.Contains(name, "/") {
			return nil
		}
		return field.ErrorList{field.Invalid(p, name, "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'")}
	}
	for i, c := range claim.Constraints {
		for j, name := range c.Requests {
			errs = append(errs, known(name, path.Child("constraints").Index(i).Child("requests").Index(j))...)
		}
	}
	errs = append(errs, validateDeviceConfigs(len(claim.Config), func(i int) resourcev1.DeviceConfiguration { return claim.Config[i].DeviceConfiguration },
		path.Child("config"))...)
	for i, c := range claim.Config {
		for j, name := range c.Requests {
			errs = append(errs, known(name, path.Child("config").Index(i).Child("requests").Index(j))...)
		}
	}
	return errs
}

func validateDeviceRequest(r resourcev1.DeviceRequest, path *field.Path) field.ErrorList {
	errs := corevalidation.DNSLabel(r.Name, path.Child("name"))
	switch {
	case r.Exactly == nil && len(r.FirstAvailable) == 0:
		errs = append(errs, field.Required(path, "exactly one of `exactly` or `firstAvailable` is required"))
	case r.Exactly != nil && len(r.FirstAvailable) > 0:
		errs = append(errs, field.Invalid(path, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
	case r.Exactly != nil:
		e, p := r.Exactly, path.Child("exactly")
		errs = append(errs, validateDeviceClassName(e.DeviceClassName, p.Child("deviceClassName"))...)
		errs = append(errs, validateDeviceSelectors(e.Selectors, p.Child("selectors"))...)
		errs = append(errs, validateAllocationMode(e.AllocationMode, e.Count, p)...)
	default:
		subs := map[string]bool{}
		for i, s := range r.FirstAvailable {
			p := path.Child("firstAvailable").Index(i)
			if subs[s.Name] {
				errs = append(errs, field.Duplicate(p, s.Name))
			}
			subs[s.Name] = true
			errs = append(errs, corevalidation.DNSLabel(s.Name, p.Child("name"))...)
			errs = append(errs, validateDeviceClassName(s.DeviceClassName, p.Child("deviceClassName"))...)
			errs = append(errs, validateDeviceSelectors(s.Selectors, p.Child("selectors"))...)
			errs = append(errs, validateAllocationMode(s.AllocationMode, s.Count, p)...)
		}
	}
	return errs
}

func validateDeviceClassName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return corevalidation.InvalidEach(path, name, utilvalidation.IsDNS1123Subdomain(name))
}

func validateAllocationMode(mode resourcev1.DeviceAllocationMode, count int64, path *field.Path) field.ErrorList {
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			return field.ErrorList{field.Invalid(path.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode))}
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			return field.ErrorList{field.Invalid(path.Child("count"), count, "must be greater than zero")}
		}
	default:
		return field.ErrorList{field.NotSupported(path.Child("allocationMode"), mode,
			[]resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount})}
	}
	return nil
}

// validateDeviceSelectors checks that each selector has a CEL expression within kube's
// length limit. The expression is not compiled: k8s.io/dynamic-resource-allocation/cel
// is not a dependency (nothing here evaluates selectors).
func validateDeviceSelectors(selectors []resourcev1.DeviceSelector, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(selectors) > resourcev1.DeviceSelectorsMaxSize {
		errs = append(errs, field.TooMany(path, len(selectors), resourcev1.DeviceSelectorsMaxSize))
	}
	for i, s := range selectors {
		p := path.Index(i).Child("cel")
		switch {
		case s.CEL == nil:
			errs = append(errs, field.Required(p, ""))
		case strings.TrimSpace(s.CEL.Expression) == "":
			errs = append(errs, field.Required(p.Child("expression"), "expression is required"))
		case len(s.CEL.Expression) > resourcev1.CELSelectorExpressionMaxLength:
			errs = append(errs, field.TooLong(p.Child("expression"), "", resourcev1.CELSelectorExpressionMaxLength))
		}
	}
	return errs
}

func validateDeviceConfigs(n int, config func(i int) resourcev1.DeviceConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if n > resourcev1.DeviceConfigMaxSize {
		errs = append(errs, field.TooMany(path, n, resourcev1.DeviceConfigMaxSize))
	}
	for i := range n {
		c, p := config(i), path.Index(i)
		if c.Opaque == nil {
			errs = append(errs, field.Required(p.Child("opaque"), ""))
			continue
		}
		errs = append(errs, corevalidation.ValidateDriverName(c.Opaque.Driver, p.Child("opaque", "driver"))...)
		if len(c.Opaque.Parameters.Raw) == 0 {
			errs = append(errs, field.Required(p.Child("opaque", "parameters"), ""))
		}
	}
	return errs
}

var ResourceSliceRules = registry.Rules{
	ReturnDeletedObject: true,
	Generation:          true,
	Validate: func(obj runtime.Object) field.ErrorList {
		s := obj.(*resourcev1.ResourceSlice)
		return append(registry.ValidateMeta(s, false, validation.NameIsDNSSubdomain), validateResourceSliceSpec(&s.Spec)...)
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		s, o := obj.(*resourcev1.ResourceSlice), old.(*resourcev1.ResourceSlice)
		errs := validateResourceSliceSpec(&s.Spec)
		path := field.NewPath("spec")
		errs = append(errs, registry.Immutable(s.Spec.Pool.Name, o.Spec.Pool.Name, path.Child("pool", "name"))...)
		errs = append(errs, registry.Immutable(s.Spec.Driver, o.Spec.Driver, path.Child("driver"))...)
		return append(errs, registry.Immutable(s.Spec.NodeName, o.Spec.NodeName, path.Child("nodeName"))...)
	},
	Warnings: func(obj, _ runtime.Object) []string {
		if d := obj.(*resourcev1.ResourceSlice).Spec.Driver; d != strings.ToLower(d) {
			return []string{fmt.Sprintf("spec.driver: driver names should be lowercase; %q contains uppercase characters", d)}
		}
		return nil
	},
	// kube's selectable fields of a ResourceSlice (resource.ResourceSliceSelectorNodeName,
	// ResourceSliceSelectorDriver): kubelet lists its node's slices by spec.nodeName.
	Fields: func(obj runtime.Object) fields.Set {
		s := obj.(*resourcev1.ResourceSlice)
		return fields.Set{"spec.nodeName": registry.StringOr(s.Spec.NodeName, ""), "spec.driver": s.Spec.Driver}
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{registry.NameColumn,
			registry.Column("Node", "string", resourcev1.ResourceSliceSpec{}.SwaggerDoc()["nodeName"], false),
			registry.Column("Driver", "string", resourcev1.ResourceSliceSpec{}.SwaggerDoc()["driver"], false),
			registry.Column("Pool", "string", resourcev1.ResourcePool{}.SwaggerDoc()["name"], false),
			registry.AgeColumn},
		Row: func(obj runtime.Object) []any {
			s := obj.(*resourcev1.ResourceSlice)
			return []any{s.Name, registry.StringOr(s.Spec.NodeName, ""), s.Spec.Driver, s.Spec.Pool.Name, registry.Age(s.CreationTimestamp)}
		},
	},
}

func validateResourceSliceSpec(spec *resourcev1.ResourceSliceSpec) field.ErrorList {
	path := field.NewPath("spec")
	errs := corevalidation.ValidateDriverName(spec.Driver, path.Child("driver"))
	pool := path.Child("pool")
	if spec.Pool.Name == "" {
		errs = append(errs, field.Required(pool.Child("name"), ""))
	} else {
		if len(spec.Pool.Name) > resourcev1.PoolNameMaxLength {
			errs = append(errs, field.TooLong(pool.Child("name"), "", resourcev1.PoolNameMaxLength))
		}
		for _, part := range strings.Split(spec.Pool.Name, "/") {
			errs = append(errs, corevalidation.InvalidEach(pool.Child("name"), part, utilvalidation.IsDNS1123Subdomain(part))...)
		}
	}
	if spec.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(pool.Child("resourceSliceCount"), spec.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	if spec.Pool.Generation < 0 {
		errs = append(errs, field.Invalid(pool.Child("generation"), spec.Pool.Generation, "must be greater than or equal to zero"))
	}
	// Exactly one way of naming the nodes the devices are on.
	var set []string
	if spec.NodeName != nil {
		if *spec.NodeName == "" {
			errs = append(errs, field.Invalid(path.Child("nodeName"), "", "must be either unset or set to a non-empty string"))
		} else {
			set = append(set, "`nodeName`")
			errs = append(errs, corevalidation.InvalidEach(path.Child("nodeName"), *spec.NodeName, validation.NameIsDNSSubdomain(*spec.NodeName, false))...)
		}
	}
	if spec.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		if len(spec.NodeSelector.NodeSelectorTerms) != 1 {
			errs = append(errs, field.Invalid(path.Child("nodeSelector", "nodeSelectorTerms"), spec.NodeSelector.NodeSelectorTerms, "must have exactly one node selector term"))
		}
	}
	for name, v := range map[string]*bool{"allNodes": spec.AllNodes, "perDeviceNodeSelection": spec.PerDeviceNodeSelection} {
		switch {
		case v == nil:
		case *v:
			set = append(set, "`"+name+"`")
		default:
			errs = append(errs, field.Invalid(path.Child(name), false, "must be either unset or set to true"))
		}
	}
	switch len(set) {
	case 0:
		errs = append(errs, field.Required(path, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
	case 1:
	default:
		errs = append(errs, field.Invalid(path, fmt.Sprintf("{%s}", strings.Join(set, ", ")),
			"exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"))
	}
	if spec.SharedCounters != nil && spec.Devices != nil {
		errs = append(errs, field.Invalid(path, "", "only one of `sharedCounters` or `devices` is allowed"))
	}
	if len(spec.Devices) > resourcev1.ResourceSliceMaxDevices {
		errs = append(errs, field.TooMany(path.Child("devices"), len(spec.Devices), resourcev1.ResourceSliceMaxDevices))
	}
	devices := map[string]bool{}
	for i, d := range spec.Devices {
		p := path.Child("devices").Index(i)
		if devices[d.Name] {
			errs = append(errs, field.Duplicate(p, d.Name))
		}
		devices[d.Name] = true
		errs = append(errs, corevalidation.DNSLabel(d.Name, p.Child("name"))...)
	}
	return errs
}
