package networking

import (
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// networking.k8s.io/v1 ServiceCIDR and IPAddress as Kubernetes' strategies, validation and
// printers have them. The default ServiceCIDR is the API server's Service range
// (apiserver's bootstrap); the IPAddresses of Service cluster IPs are the allocator's keys.

var ServiceCIDRRules = registry.Rules{
	PrepareCreate: func(obj runtime.Object) {
		obj.(*networkingv1.ServiceCIDR).Status = networkingv1.ServiceCIDRStatus{}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateServiceCIDR(obj.(*networkingv1.ServiceCIDR))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return validateServiceCIDRUpdate(obj.(*networkingv1.ServiceCIDR), old.(*networkingv1.ServiceCIDR))
	},
	StatusMetadata: metav1.ResetObjectMetaForStatus,
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("CIDRs", "string", networkingv1.ServiceCIDRSpec{}.SwaggerDoc()["cidrs"], false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			sc := obj.(*networkingv1.ServiceCIDR)
			return []any{sc.Name, strings.Join(sc.Spec.CIDRs, ","), registry.Age(sc.CreationTimestamp)}
		},
	},
}

func validateServiceCIDR(sc *networkingv1.ServiceCIDR) field.ErrorList {
	errs := registry.ValidateMeta(sc, false, validation.NameIsDNSSubdomain)
	return append(errs, validateServiceCIDRs(sc.Spec.CIDRs, field.NewPath("spec", "cidrs"))...)
}

// validateServiceCIDRs: one or two valid CIDRs, at most one of each IP family.
func validateServiceCIDRs(cidrs []string, path *field.Path) field.ErrorList {
	switch {
	case len(cidrs) == 0:
		return field.ErrorList{field.Required(path, "at least one CIDR required")}
	case len(cidrs) > 2:
		return field.ErrorList{field.Invalid(path, registry.GoNamed{V: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}, "may only hold up to 2 values")}
	}
	var errs field.ErrorList
	for i, cidr := range cidrs {
		errs = append(errs, utilvalidation.IsValidCIDR(path.Index(i), cidr)...)
	}
	if len(cidrs) == 2 {
		family := netutils.IPFamilyOfCIDRString(cidrs[0])
		if family != netutils.IPFamilyUnknown && family == netutils.IPFamilyOfCIDRString(cidrs[1]) {
			errs = append(errs, field.Invalid(path, cidrs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
		}
	}
	return errs
}

// validateServiceCIDRUpdate: the CIDRs are immutable, except that a single-stack
// ServiceCIDR may gain a CIDR of the other family (https://issues.k8s.io/131261).
func validateServiceCIDRUpdate(sc, old *networkingv1.ServiceCIDR) field.ErrorList {
	path := field.NewPath("spec", "cidrs")
	cidrs, was := sc.Spec.CIDRs, old.Spec.CIDRs
	var errs field.ErrorList
	switch {
	case len(cidrs) == len(was):
		for i := range was {
			if cidrs[i] != was[i] {
				errs = append(errs, field.Invalid(path.Index(i), cidrs[i], validation.FieldImmutableErrorMsg))
			}
		}
	case len(was) == 1 && len(cidrs) == 2:
		if cidrs[0] != was[0] {
			errs = append(errs, field.Invalid(path.Index(0), cidrs[0], validation.FieldImmutableErrorMsg))
		}
		errs = append(errs, validateServiceCIDRs(cidrs, path)...)
	default:
		errs = append(errs, field.Invalid(path, cidrs, validation.FieldImmutableErrorMsg))
	}
	return errs
}

var IPAddressRules = registry.Rules{
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateIPAddress(obj.(*networkingv1.IPAddress))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		ip, o := obj.(*networkingv1.IPAddress), old.(*networkingv1.IPAddress)
		return append(validateIPAddress(ip), registry.Immutable(ip.Spec.ParentRef, o.Spec.ParentRef, field.NewPath("spec", "parentRef"))...)
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("ParentRef", "string", networkingv1.IPAddressSpec{}.SwaggerDoc()["parentRef"], false),
		},
		Row: func(obj runtime.Object) []any {
			ip := obj.(*networkingv1.IPAddress)
			return []any{ip.Name, parentRefText(ip.Spec.ParentRef)}
		},
	},
}

// parentRefText is the PARENTREF column: resource.group[/namespace]/name.
func parentRefText(ref *networkingv1.ParentReference) string {
	if ref == nil {
		return "<none>"
	}
	text := strings.ToLower(schema.GroupResource{Group: ref.Group, Resource: ref.Resource}.String())
	if ref.Namespace != "" {
		text += "/" + ref.Namespace
	}
	return text + "/" + ref.Name
}

// validateIPAddress: the name is an IP address in canonical form; the parent reference
// names a resource, its object and, optionally, its namespace.
func validateIPAddress(ip *networkingv1.IPAddress) field.ErrorList {
	errs := registry.ValidateMeta(ip, false, ipAddressName)
	path := field.NewPath("spec", "parentRef")
	ref := ip.Spec.ParentRef
	if ref == nil {
		return append(errs, field.Required(path, ""))
	}
	if ref.Group != "" { // the core group, Services', is ""
		errs = append(errs, corevalidation.InvalidEach(path.Child("group"), ref.Group, utilvalidation.IsDNS1123Subdomain(ref.Group))...)
	}
	pathSegment := func(value, name string, required bool) {
		if value == "" {
			if required {
				errs = append(errs, field.Required(path.Child(name), ""))
			}
			return
		}
		errs = append(errs, corevalidation.InvalidEach(path.Child(name), value, content.IsPathSegmentName(value))...)
	}
	pathSegment(ref.Resource, "resource", true)
	pathSegment(ref.Name, "name", true)
	pathSegment(ref.Namespace, "namespace", false)
	return errs
}

// ipAddressName: an IPAddress is named by its address, in canonical form.
func ipAddressName(name string, _ bool) []string {
	var msgs []string
	for _, err := range utilvalidation.IsValidIP(&field.Path{}, name) {
		msgs = append(msgs, err.Detail)
	}
	return msgs
}
