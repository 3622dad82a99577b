package core

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
	"k8s.io/utils/ptr"
)

// Limits of one EndpointSlice, as in Kubernetes.
const (
	maxSliceEndpoints = 1000
	maxSliceAddresses = 100
	maxSlicePorts     = 20000
	maxTopologyLabels = 16
	maxHints          = 8 // zones, and nodes
)

var EndpointsRules = registry.Rules{
	Warnings: func(obj, _ runtime.Object) []string { return endpointsWarnings(obj.(*corev1.Endpoints)) },
	Default: func(obj runtime.Object) {
		for _, ss := range obj.(*corev1.Endpoints).Subsets {
			for i := range ss.Ports {
				if ss.Ports[i].Protocol == "" {
					ss.Ports[i].Protocol = corev1.ProtocolTCP
				}
			}
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList { return validateEndpoints(obj.(*corev1.Endpoints), nil) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return validateEndpoints(obj.(*corev1.Endpoints), old.(*corev1.Endpoints))
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{registry.NameColumn, registry.Column("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"], false), registry.AgeColumn},
		Row: func(obj runtime.Object) []any {
			ep := obj.(*corev1.Endpoints)
			return []any{ep.Name, endpointsText(ep), registry.Age(ep.CreationTimestamp)}
		},
	},
}

// validateEndpoints is kube's ValidateEndpoints: subsets an update leaves as stored are
// not checked again (older versions took them).
func validateEndpoints(ep, old *corev1.Endpoints) field.ErrorList {
	errs := registry.ValidateMeta(ep, true, validation.NameIsDNSSubdomain)
	subsetErrs := validateEndpointSubsets(ep.Subsets)
	if len(subsetErrs) > 0 && old != nil && equality.Semantic.DeepEqual(old.Subsets, ep.Subsets) {
		subsetErrs = nil
	}
	return append(errs, subsetErrs...)
}

func validateEndpointSubsets(subsets []corev1.EndpointSubset) field.ErrorList {
	var errs field.ErrorList
	for i, ss := range subsets {
		path := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(path, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j, a := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(a, path.Child("addresses").Index(j))...)
		}
		for j, a := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(a, path.Child("notReadyAddresses").Index(j))...)
		}
		for j, p := range ss.Ports {
			pp := path.Child("ports").Index(j)
			errs = append(errs, validatePortName(p.Name, len(ss.Ports) > 1, pp.Child("name"))...)
			errs = append(errs, registry.ValidatePort(p.Port, pp.Child("port"))...)
			if !slices.Contains(registry.ServiceProtocols, p.Protocol) {
				errs = append(errs, field.NotSupported(pp.Child("protocol"), p.Protocol, registry.ServiceProtocols))
			}
			errs = append(errs, validateAppProtocol(p.AppProtocol, pp.Child("appProtocol"))...)
		}
	}
	return errs
}

// validateEndpointAddress is kube's, in its order: the IP as a legacy field, the hostname
// and node name, then the IP's range, which names an IP that does not parse once more.
func validateEndpointAddress(a corev1.EndpointAddress, path *field.Path) field.ErrorList {
	errs := legacyIP(nil)(path.Child("ip"), a.IP)
	if a.Hostname != "" {
		errs = append(errs, corevalidation.InvalidEach(path.Child("hostname"), a.Hostname, utilvalidation.IsDNS1123Label(a.Hostname))...)
	}
	if a.NodeName != nil {
		errs = append(errs, corevalidation.InvalidEach(path.Child("nodeName"), *a.NodeName, validation.NameIsDNSSubdomain(*a.NodeName, false))...)
	}
	if netutils.ParseIPSloppy(a.IP) == nil {
		return append(errs, field.Invalid(path.Child("ip"), a.IP, "must be a valid IP address"))
	}
	return append(errs, endpointIPRange(a.IP, path.Child("ip"))...)
}

// validateAppProtocol is kube's check of a port's appProtocol: a qualified name.
func validateAppProtocol(appProtocol *string, path *field.Path) field.ErrorList {
	if appProtocol == nil {
		return nil
	}
	return corevalidation.InvalidEach(path, *appProtocol, utilvalidation.IsQualifiedName(*appProtocol))
}

// legacyIP is kube's check of an IP in a field that always took one: any form but leading
// zeros and IPv4-mapped IPv6 (a non-canonical IPv6 address is warned of), and what the old
// object had.
func legacyIP(old []string) func(*field.Path, string) field.ErrorList {
	return func(path *field.Path, ip string) field.ErrorList {
		return utilvalidation.IsValidIPForLegacyField(path, ip, true, old)
	}
}

// validateEndpointIP refuses what is not an IP (as valid checks it) or makes no sense as
// an endpoint.
func validateEndpointIP(ip string, path *field.Path, valid func(*field.Path, string) field.ErrorList) field.ErrorList {
	if errs := valid(path, ip); len(errs) > 0 {
		return errs
	}
	return endpointIPRange(ip, path)
}

// endpointIPRange is kube's ValidateEndpointIP for an address already known to be an IP:
// not the unspecified, loopback or link-local addresses.
func endpointIPRange(ip string, path *field.Path) field.ErrorList {
	addr := netutils.ParseIPSloppy(ip)
	var msg string
	switch {
	case addr.IsUnspecified():
		msg = fmt.Sprintf("may not be unspecified (%v)", ip)
	case addr.IsLoopback():
		msg = "may not be in the loopback range (127.0.0.0/8, ::1/128)"
	case addr.IsLinkLocalUnicast():
		msg = "may not be in the link-local range (169.254.0.0/16, fe80::/10)"
	case addr.IsLinkLocalMulticast():
		msg = "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"
	default:
		return nil
	}
	return field.ErrorList{field.Invalid(path, ip, msg)}
}

func validatePortName(name string, required bool, path *field.Path) field.ErrorList {
	if name == "" {
		if required {
			return field.ErrorList{field.Required(path, "")}
		}
		return nil
	}
	return corevalidation.InvalidEach(path, name, utilvalidation.IsDNS1123Label(name))
}

// endpointsText is the ENDPOINTS column: up to three address:port pairs, then "+ N more...".
func endpointsText(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	var list []string
	count := 0
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 { // headless without ports
			for _, a := range ss.Addresses {
				list = append(list, a.IP)
			}
			count += len(ss.Addresses)
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
			count += len(ss.Addresses)
		}
	}
	if len(list) == 0 {
		return ""
	}
	return listWithMore(list, count)
}

// listWithMore joins the first three items, "+ N more..." for the rest, "<unset>" for none.
func listWithMore(list []string, count int) string {
	const shown = 3
	if len(list) > shown {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:shown], ","), count-shown)
	}
	if len(list) == 0 {
		return "<unset>"
	}
	return strings.Join(list, ",")
}

var EndpointSliceRules = registry.Rules{
	Warnings: func(obj, old runtime.Object) []string {
		return endpointSliceWarnings(obj.(*discoveryv1.EndpointSlice), old == nil)
	},
	// Anything but the metadata, or the labels, as kube's endpointslice strategy: the
	// endpointslice controllers tell their own writes from others' by it.
	GenerationChanged: func(obj, old runtime.Object) bool {
		s, o := *obj.(*discoveryv1.EndpointSlice), *old.(*discoveryv1.EndpointSlice)
		labelsChanged := !equality.Semantic.DeepEqual(s.Labels, o.Labels)
		s.TypeMeta, o.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
		s.ObjectMeta, o.ObjectMeta = metav1.ObjectMeta{}, metav1.ObjectMeta{}
		return labelsChanged || !equality.Semantic.DeepEqual(s, o)
	},
	Default: func(obj runtime.Object) {
		s := obj.(*discoveryv1.EndpointSlice)
		for i := range s.Ports {
			p := &s.Ports[i]
			if p.Name == nil {
				empty := ""
				p.Name = &empty
			}
			if p.Protocol == nil {
				tcp := corev1.ProtocolTCP
				p.Protocol = &tcp
			}
		}
	},
	PrepareCreate: func(obj runtime.Object) { dropDeprecatedTopology(obj.(*discoveryv1.EndpointSlice), nil) },
	PrepareUpdate: func(obj, old runtime.Object) {
		dropDeprecatedTopology(obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice))
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateEndpointSlice(obj.(*discoveryv1.EndpointSlice), nil)
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		s, o := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
		return append(validateEndpointSlice(s, o), registry.Immutable(s.AddressType, o.AddressType, field.NewPath("addressType"))...)
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("AddressType", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"], false),
			registry.Column("Ports", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"], false),
			registry.Column("Endpoints", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"], false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			s := obj.(*discoveryv1.EndpointSlice)
			var ports, addrs []string
			for _, p := range s.Ports {
				switch {
				case p.Port != nil:
					ports = append(ports, strconv.Itoa(int(*p.Port)))
				case p.Name != nil:
					ports = append(ports, *p.Name)
				default:
					ports = append(ports, "*")
				}
			}
			for _, e := range s.Endpoints {
				addrs = append(addrs, e.Addresses...)
			}
			return []any{s.Name, string(s.AddressType), listWithMore(ports, len(ports)), listWithMore(addrs, len(addrs)), registry.Age(s.CreationTimestamp)}
		},
	},
}

// The address types, sorted as kube lists them.
var addressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}

// validateEndpointSlice is kube's, in its order: the address type, the ports, then the
// endpoints, which an update that leaves them as stored does not check again.
func validateEndpointSlice(s, old *discoveryv1.EndpointSlice) field.ErrorList {
	errs := registry.ValidateMeta(s, true, validation.NameIsDNSSubdomain)
	switch {
	case s.AddressType == "":
		errs = append(errs, field.Required(field.NewPath("addressType"), ""))
	case !slices.Contains(addressTypes, s.AddressType):
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), s.AddressType, addressTypes))
	}
	errs = append(errs, validateSlicePorts(s.Ports)...)
	endpointErrs := validateSliceEndpoints(s.Endpoints, s.AddressType)
	if len(endpointErrs) > 0 && old != nil && equality.Semantic.DeepEqual(old.Endpoints, s.Endpoints) {
		endpointErrs = nil
	}
	return append(errs, endpointErrs...)
}

// validateSlicePorts is kube's: names (defaulted to "") unique, protocols known; the
// port number is not checked.
func validateSlicePorts(ports []discoveryv1.EndpointPort) field.ErrorList {
	path := field.NewPath("ports")
	if len(ports) > maxSlicePorts {
		return field.ErrorList{field.TooMany(path, len(ports), maxSlicePorts)}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i, p := range ports {
		pp := path.Index(i)
		name := ptr.Deref(p.Name, "")
		errs = append(errs, validatePortName(name, false, pp.Child("name"))...)
		if names.Has(name) {
			errs = append(errs, field.Duplicate(pp.Child("name"), name))
		}
		names.Insert(name)
		switch {
		case p.Protocol == nil:
			errs = append(errs, field.Required(pp.Child("protocol"), ""))
		case !slices.Contains(registry.ServiceProtocols, *p.Protocol):
			errs = append(errs, field.NotSupported(pp.Child("protocol"), *p.Protocol, registry.ServiceProtocols))
		}
		errs = append(errs, validateAppProtocol(p.AppProtocol, pp.Child("appProtocol"))...)
	}
	return errs
}

// validateSliceEndpoints is kube's: addresses of the slice's type (an unknown type's are
// not checked), node names, hostnames and hints.
func validateSliceEndpoints(endpoints []discoveryv1.Endpoint, t discoveryv1.AddressType) field.ErrorList {
	path := field.NewPath("endpoints")
	if len(endpoints) > maxSliceEndpoints {
		return field.ErrorList{field.TooMany(path, len(endpoints), maxSliceEndpoints)}
	}
	var errs field.ErrorList
	for i, e := range endpoints {
		ep := path.Index(i)
		ap := ep.Child("addresses")
		switch {
		case len(e.Addresses) == 0:
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		case len(e.Addresses) > maxSliceAddresses:
			errs = append(errs, field.TooMany(ap, len(e.Addresses), maxSliceAddresses))
		}
		if slices.Contains(addressTypes, t) {
			for j, a := range e.Addresses {
				errs = append(errs, validateSliceAddress(t, a, ap, j)...)
			}
		}
		if e.NodeName != nil {
			errs = append(errs, corevalidation.InvalidEach(ep.Child("nodeName"), *e.NodeName, validation.NameIsDNSSubdomain(*e.NodeName, false))...)
		}
		errs = append(errs, validateDeprecatedTopology(e.DeprecatedTopology, ep.Child("deprecatedTopology"))...)
		if e.Hostname != nil {
			errs = append(errs, corevalidation.InvalidEach(ep.Child("hostname"), *e.Hostname, utilvalidation.IsDNS1123Label(*e.Hostname))...)
		}
		if e.Hints != nil {
			errs = append(errs, validateHints(e.Hints, ep.Child("hints"))...)
		}
	}
	return errs
}

// validateDeprecatedTopology checks what an update that leaves the endpoints as stored
// keeps (other writes through v1 drop the field): labels, of which the zone is reserved.
func validateDeprecatedTopology(topology map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(topology) > maxTopologyLabels {
		errs = append(errs, field.TooMany(path, len(topology), maxTopologyLabels))
	}
	errs = append(errs, metavalidation.ValidateLabels(topology, path)...)
	if _, ok := topology[corev1.LabelTopologyZone]; ok {
		errs = append(errs, field.InternalError(path.Key(corev1.LabelTopologyZone), fmt.Errorf("reserved key was not removed in conversion")))
	}
	return errs
}

// validateHints is kube's: at most 8 zones and 8 nodes, each named once and validly.
func validateHints(hints *discoveryv1.EndpointHints, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	zones := path.Child("forZones")
	if len(hints.ForZones) > maxHints {
		return append(errs, field.TooMany(zones, len(hints.ForZones), maxHints))
	}
	seen := sets.New[string]()
	for i, z := range hints.ForZones {
		zp := zones.Index(i).Child("name")
		if seen.Has(z.Name) {
			errs = append(errs, field.Duplicate(zp, z.Name))
		}
		seen.Insert(z.Name)
		errs = append(errs, corevalidation.InvalidEach(zp, z.Name, utilvalidation.IsValidLabelValue(z.Name))...)
	}
	nodes := path.Child("forNodes")
	if len(hints.ForNodes) > maxHints {
		return append(errs, field.TooMany(nodes, len(hints.ForNodes), maxHints))
	}
	seen = sets.New[string]()
	for i, n := range hints.ForNodes {
		np := nodes.Index(i).Child("name")
		if seen.Has(n.Name) {
			errs = append(errs, field.Duplicate(np, n.Name))
		}
		seen.Insert(n.Name)
		errs = append(errs, corevalidation.InvalidEach(np, n.Name, validation.NameIsDNSSubdomain(n.Name, false))...)
	}
	return errs
}

// dropDeprecatedTopology is kube's dropTopologyOnV1 (every write here is through v1): it
// clears each endpoint's deprecatedTopology unless the update leaves the endpoints as
// stored; a node name the old slice held there moves to nodeName when none is given.
func dropDeprecatedTopology(s, old *discoveryv1.EndpointSlice) {
	if old != nil && equality.Semantic.DeepEqual(old.Endpoints, s.Endpoints) {
		return
	}
	prev := sets.New[string]()
	if old != nil {
		for _, e := range old.Endpoints {
			if n := e.DeprecatedTopology[corev1.LabelHostname]; n != "" {
				prev.Insert(n)
			}
		}
	}
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		n, ok := e.DeprecatedTopology[corev1.LabelHostname]
		if e.NodeName == nil && ok && prev.Has(n) && len(validation.NameIsDNSSubdomain(n, false)) == 0 {
			e.NodeName = &n
		}
		e.DeprecatedTopology = nil
	}
}

// validateSliceAddress is kube's check of the j-th address under path: an IPv4 one as a
// legacy field, an IPv6 one in canonical form; a wrong family is named on the list.
func validateSliceAddress(t discoveryv1.AddressType, a string, path *field.Path, j int) field.ErrorList {
	valid := legacyIP(nil)
	switch t {
	case discoveryv1.AddressTypeFQDN:
		return utilvalidation.IsFullyQualifiedDomainName(path.Index(j), a)
	case discoveryv1.AddressTypeIPv6:
		valid = utilvalidation.IsValidIP
	}
	if errs := valid(path.Index(j), a); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	if ip, _ := netip.ParseAddr(a); (t == discoveryv1.AddressTypeIPv4) != ip.Unmap().Is4() {
		errs = append(errs, field.Invalid(path, a, "must be an "+string(t)+" address"))
	}
	return append(errs, endpointIPRange(a, path.Index(j))...)
}

// The managed-by values of kube's endpoints, endpointslice and endpointslicemirroring
// controllers, which ours write too: kube-apiserver trusts their addresses.
const (
	EndpointsManagedByLabel              = "endpoints.kubernetes.io/managed-by"
	EndpointsControllerName              = "endpoint-controller"
	EndpointSliceControllerName          = "endpointslice-controller.k8s.io"
	EndpointSliceMirroringControllerName = "endpointslicemirroring-controller.k8s.io"
)

// endpointsWarnings are kube's: addresses not in their canonical form, unless kube's own
// controller wrote them.
func endpointsWarnings(ep *corev1.Endpoints) []string {
	if ep.Labels[EndpointsManagedByLabel] == EndpointsControllerName {
		return nil
	}
	var out []string
	for i, ss := range ep.Subsets {
		path := field.NewPath("subsets").Index(i)
		for j, a := range ss.Addresses {
			out = append(out, utilvalidation.GetWarningsForIP(path.Child("addresses").Index(j).Child("ip"), a.IP)...)
		}
		for j, a := range ss.NotReadyAddresses {
			out = append(out, utilvalidation.GetWarningsForIP(path.Child("notReadyAddresses").Index(j).Child("ip"), a.IP)...)
		}
	}
	return out
}

// endpointSliceWarnings are kube's: the FQDN address type (on create), and addresses not in
// their canonical form unless one of kube's controllers wrote them (an FQDN is no address).
func endpointSliceWarnings(s *discoveryv1.EndpointSlice, create bool) []string {
	var out []string
	if create && s.AddressType == discoveryv1.AddressTypeFQDN {
		out = append(out, "spec.addressType: FQDN endpoints are deprecated")
	}
	if by := s.Labels[discoveryv1.LabelManagedBy]; by == EndpointSliceControllerName || by == EndpointSliceMirroringControllerName || s.AddressType == discoveryv1.AddressTypeFQDN {
		return out
	}
	for i, e := range s.Endpoints {
		for j, addr := range e.Addresses {
			out = append(out, utilvalidation.GetWarningsForIP(field.NewPath("endpoints").Index(i).Child("addresses").Index(j), addr)...)
		}
	}
	return out
}
