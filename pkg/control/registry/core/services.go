package core

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
	"k8s.io/utils/ptr"
)

// maxClientIPAffinitySeconds is the longest ClientIP session affinity Kubernetes allows.
const maxClientIPAffinitySeconds = 86400

var ServiceRules = registry.Rules{
	ReturnDeletedObject: true,
	PrepareCreate: func(obj runtime.Object) {
		svc := obj.(*corev1.Service)
		svc.Status = corev1.ServiceStatus{}
		dropExternalNameTrafficPolicy(svc)
	},
	PrepareUpdate: func(obj, old runtime.Object) { prepareServiceUpdate(obj.(*corev1.Service), old.(*corev1.Service)) },
	Default:       func(obj runtime.Object) { defaultService(obj.(*corev1.Service)) },
	Validate:      func(obj runtime.Object) field.ErrorList { return validateService(obj.(*corev1.Service)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return validateServiceUpdate(obj.(*corev1.Service), old.(*corev1.Service))
	},
	SubresourceUpdates: map[string]registry.SubresourceRules{"status": registry.ServiceStatusUpdate},
	Warnings:           func(obj, _ runtime.Object) []string { return serviceWarnings(obj.(*corev1.Service)) },
	Claim:              claimService,
	Release:            releaseService,
	Fields: func(obj runtime.Object) fields.Set {
		svc := obj.(*corev1.Service)
		return fields.Set{"spec.clusterIP": svc.Spec.ClusterIP, "spec.type": string(svc.Spec.Type)}
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"], false),
			registry.Column("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"], false),
			registry.Column("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"], false),
			registry.Column("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"], false),
			registry.AgeColumn,
			registry.Column("Selector", "string", corev1.ServiceSpec{}.SwaggerDoc()["selector"], true),
		},
		Row: func(obj runtime.Object) []any {
			svc := obj.(*corev1.Service)
			clusterIP := "<none>"
			if len(svc.Spec.ClusterIPs) > 0 {
				clusterIP = svc.Spec.ClusterIPs[0]
			}
			return []any{svc.Name, string(svc.Spec.Type), clusterIP, serviceExternalIP(svc), servicePorts(svc.Spec.Ports),
				registry.Age(svc.CreationTimestamp), labels.FormatLabels(svc.Spec.Selector)}
		},
	},
}

// defaultService is Kubernetes' core/v1 Service defaulting. The IP family fields are set
// when the cluster IP is allocated, since they depend on the cluster's range.
func defaultService(svc *corev1.Service) {
	s := &svc.Spec
	if s.SessionAffinity == "" {
		s.SessionAffinity = corev1.ServiceAffinityNone
	}
	if s.SessionAffinity == corev1.ServiceAffinityNone {
		s.SessionAffinityConfig = nil
	}
	if s.SessionAffinity == corev1.ServiceAffinityClientIP {
		if s.SessionAffinityConfig == nil || s.SessionAffinityConfig.ClientIP == nil || s.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
			timeout := corev1.DefaultClientIPServiceAffinitySeconds
			s.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
		}
	}
	if s.Type == "" {
		s.Type = corev1.ServiceTypeClusterIP
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if externallyAccessible(svc) && s.ExternalTrafficPolicy == "" {
		s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if s.Type != corev1.ServiceTypeExternalName && s.InternalTrafficPolicy == nil {
		cluster := corev1.ServiceInternalTrafficPolicyCluster
		s.InternalTrafficPolicy = &cluster
	}
	if s.Type == corev1.ServiceTypeLoadBalancer && s.AllocateLoadBalancerNodePorts == nil {
		t := true
		s.AllocateLoadBalancerNodePorts = &t
	}
	if s.Type == corev1.ServiceTypeLoadBalancer {
		for i, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" && in.IPMode == nil {
				svc.Status.LoadBalancer.Ingress[i].IPMode = ptr.To(corev1.LoadBalancerIPModeVIP)
			}
		}
	}
}

// prepareServiceUpdate keeps what was allocated for the Service when the client leaves it
// out (so re-applying the YAML it was created from works), and drops what the new type no
// longer needs when the client did not change it.
func prepareServiceUpdate(svc, old *corev1.Service) {
	dropTypeDependentFields(svc, old)
	dropExternalNameTrafficPolicy(svc)
	if needsClusterIP(old) && needsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 {
			svc.Spec.ClusterIPs = old.Spec.ClusterIPs
		}
		if svc.Spec.IPFamilyPolicy == nil {
			svc.Spec.IPFamilyPolicy = old.Spec.IPFamilyPolicy
		}
		if len(svc.Spec.IPFamilies) == 0 && slices.Equal(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) {
			svc.Spec.IPFamilies = old.Spec.IPFamilies
		}
		singleStackUnchanged(svc, old)
	}
	normalizeClusterIPs(svc, old)
	if needsNodePorts(old) && needsNodePorts(svc) {
		used := sets.New[int32]()
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				used.Insert(p.NodePort)
			}
		}
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			if p := &svc.Spec.Ports[i]; p.NodePort == 0 && !used.Has(byName[p.Name]) {
				p.NodePort = byName[p.Name]
			}
		}
	}
	if needsHealthCheckPort(old) && needsHealthCheckPort(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

// dropExternalNameTrafficPolicy: an ExternalName Service has no internalTrafficPolicy.
// Kube once defaulted one and now drops it whenever it reads a Service, so one turned
// ExternalName (or created so with the field set) shows none; dropping it before storing
// shows the same.
func dropExternalNameTrafficPolicy(svc *corev1.Service) {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		svc.Spec.InternalTrafficPolicy = nil
	}
}

// normalizeClusterIPs reads what a client that set only the singular clusterIP meant for
// clusterIPs, as kube does before it allocates: on create (old nil) the same IP; on update
// the old IPs if it cleared clusterIPs but kept clusterIP, none if it cleared clusterIP,
// and the new IP if it changed clusterIP alone.
func normalizeClusterIPs(svc, old *corev1.Service) {
	s := &svc.Spec
	if old == nil {
		if s.ClusterIP != "" && len(s.ClusterIPs) == 0 {
			s.ClusterIPs = []string{s.ClusterIP}
		}
		return
	}
	if len(old.Spec.ClusterIPs) > 0 && len(s.ClusterIPs) == 0 && s.ClusterIP == old.Spec.ClusterIP {
		s.ClusterIPs = old.Spec.ClusterIPs
	}
	if s.ClusterIP != old.Spec.ClusterIP && slices.Equal(s.ClusterIPs, old.Spec.ClusterIPs) {
		s.ClusterIPs = nil
		if s.ClusterIP != "" {
			s.ClusterIPs = []string{s.ClusterIP}
		}
	}
}

// singleStackUnchanged: a SingleStack policy on fields left dual-stack as they were
// keeps their primary, as kube's allocator does (a clear wish to go single-stack).
func singleStackUnchanged(svc, old *corev1.Service) {
	s := &svc.Spec
	if s.IPFamilyPolicy == nil || *s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		return
	}
	if len(s.ClusterIPs) > 1 && slices.Equal(s.ClusterIPs, old.Spec.ClusterIPs) {
		s.ClusterIPs = s.ClusterIPs[:1]
	}
	if len(s.IPFamilies) > 1 && slices.Equal(s.IPFamilies, old.Spec.IPFamilies) {
		s.IPFamilies = s.IPFamilies[:1]
	}
}

// dropTypeDependentFields wipes on a type change what the new type does not use, where the
// client left it as it was (so it was likely allocated or defaulted, not asked for).
func dropTypeDependentFields(svc, old *corev1.Service) {
	s, o := &svc.Spec, &old.Spec
	if needsClusterIP(old) && !needsClusterIP(svc) {
		if slices.Equal(s.ClusterIPs, o.ClusterIPs) && s.ClusterIP == o.ClusterIP {
			s.ClusterIP, s.ClusterIPs = "", nil
		}
		if slices.Equal(s.IPFamilies, o.IPFamilies) {
			s.IPFamilies = nil
		}
		if equality.Semantic.DeepEqual(s.IPFamilyPolicy, o.IPFamilyPolicy) {
			s.IPFamilyPolicy = nil
		}
	}
	if needsNodePorts(old) && !needsNodePorts(svc) && slices.Equal(nodePorts(svc), nodePorts(old)) {
		for i := range s.Ports {
			s.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheckPort(old) && !needsHealthCheckPort(svc) && s.HealthCheckNodePort == o.HealthCheckNodePort {
		s.HealthCheckNodePort = 0
	}
	if o.Type == corev1.ServiceTypeLoadBalancer && s.Type != corev1.ServiceTypeLoadBalancer {
		if equality.Semantic.DeepEqual(s.AllocateLoadBalancerNodePorts, o.AllocateLoadBalancerNodePorts) {
			s.AllocateLoadBalancerNodePorts = nil
		}
		if equality.Semantic.DeepEqual(s.LoadBalancerClass, o.LoadBalancerClass) {
			s.LoadBalancerClass = nil
		}
	}
	if needsNodePorts(old) && !needsNodePorts(svc) && s.ExternalTrafficPolicy == o.ExternalTrafficPolicy {
		s.ExternalTrafficPolicy = ""
	}
	if s.Type != corev1.ServiceTypeLoadBalancer {
		svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	}
}

func needsClusterIP(svc *corev1.Service) bool { return svc.Spec.Type != corev1.ServiceTypeExternalName }

func needsNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// externallyAccessible: reachable from outside the cluster, through node ports or external IPs.
func externallyAccessible(svc *corev1.Service) bool {
	return needsNodePorts(svc) || svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0
}

func needsHealthCheckPort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func isHeadless(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP == corev1.ClusterIPNone || len(svc.Spec.ClusterIPs) > 0 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

func nodePorts(svc *corev1.Service) []int32 {
	var out []int32
	for _, p := range svc.Spec.Ports {
		out = append(out, p.NodePort)
	}
	return out
}

// serviceTypes in the sorted order kube names them in its error (sets.List).
var serviceTypes = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort}

// validateService checks a new Service.
func validateService(svc *corev1.Service) field.ErrorList {
	// kube-apiserver checks the IP family fields as it allocates, before it validates the
	// rest, and stops there when they are wrong.
	if errs := validateClusterIPsRelated(svc, nil); len(errs) > 0 {
		return errs
	}
	return append(validateServiceMeta(svc), validateServiceSpec(svc, nil)...)
}

// validateServiceMeta: RelaxedServiceNameValidation (beta, on by default in v1.36) allows
// any DNS label.
func validateServiceMeta(svc *corev1.Service) field.ErrorList {
	return registry.ValidateMeta(svc, true, validation.NameIsDNSLabel)
}

// validateSourceRanges is kube's check of loadBalancerSourceRanges, else of the legacy
// annotation: CIDRs (space-padded values allowed, as kube allows them), only on a
// LoadBalancer; an update keeps the invalid values it had. The field's path keeps kube's
// historical capital.
func validateSourceRanges(svc, old *corev1.Service) field.ErrorList {
	onlyLoadBalancer := func(path *field.Path) field.ErrorList {
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			return field.ErrorList{field.Forbidden(path, "may only be used when `type` is 'LoadBalancer'")}
		}
		return nil
	}
	if ranges := svc.Spec.LoadBalancerSourceRanges; len(ranges) > 0 {
		path := field.NewPath("spec", "LoadBalancerSourceRanges")
		errs := onlyLoadBalancer(path)
		var existing []string
		if old != nil {
			for _, r := range old.Spec.LoadBalancerSourceRanges {
				existing = append(existing, strings.TrimSpace(r))
			}
		}
		for i, r := range ranges {
			errs = append(errs, utilvalidation.IsValidCIDRForLegacyField(path.Index(i), strings.TrimSpace(r), true, existing)...)
		}
		return errs
	}
	value, set := svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]
	if !set {
		return nil
	}
	path := field.NewPath("metadata", "annotations").Key(corev1.AnnotationLoadBalancerSourceRangesKey)
	errs := onlyLoadBalancer(path)
	if value = strings.TrimSpace(value); value != "" && (old == nil || old.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey] != svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]) {
		for _, r := range strings.Split(value, ",") {
			errs = append(errs, utilvalidation.IsValidCIDRForLegacyField(path, strings.TrimSpace(r), true, nil)...)
		}
	}
	return errs
}

// validateServiceSpec is kube's validateService, in its order: the spec, whether created or
// updated (old is nil on create).
func validateServiceSpec(svc, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	s, spec := &svc.Spec, field.NewPath("spec")
	if len(s.Ports) == 0 && !isHeadless(svc) && s.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(spec.Child("ports"), ""))
	}
	if s.Type == corev1.ServiceTypeExternalName {
		errs = append(errs, validateExternalName(svc, spec)...)
	} else if isHeadless(svc) && needsNodePorts(svc) {
		errs = append(errs, field.Invalid(spec.Child("clusterIPs").Index(0), corev1.ClusterIPNone, fmt.Sprintf("may not be set to 'None' for %s services", s.Type)))
	}
	errs = append(errs, validateServicePorts(svc, spec.Child("ports"))...)
	errs = append(errs, metav1validation.ValidateLabels(s.Selector, spec.Child("selector"))...)
	switch s.SessionAffinity {
	case corev1.ServiceAffinityNone:
		if s.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(spec.Child("sessionAffinityConfig"), "must not be set when session affinity is None"))
		}
	case corev1.ServiceAffinityClientIP:
		if c := s.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			if t := *c.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPAffinitySeconds {
				errs = append(errs, field.Invalid(spec.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds"), t,
					fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds)))
			}
		}
	default:
		errs = append(errs, field.NotSupported(spec.Child("sessionAffinity"), s.SessionAffinity,
			[]corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}))
	}
	var oldExternalIPs []string // kept as they were, even if now invalid
	if old != nil {
		oldExternalIPs = old.Spec.ExternalIPs
	}
	for i, ip := range s.ExternalIPs {
		errs = append(errs, validateEndpointIP(ip, spec.Child("externalIPs").Index(i), legacyIP(oldExternalIPs))...)
	}
	if !slices.Contains(serviceTypes, s.Type) {
		errs = append(errs, field.NotSupported(spec.Child("type"), s.Type, serviceTypes))
	}
	errs = append(errs, validateServicePortsUnique(svc, spec.Child("ports"))...)
	errs = append(errs, validateSourceRanges(svc, old)...)
	if s.Type != corev1.ServiceTypeLoadBalancer && s.AllocateLoadBalancerNodePorts != nil {
		errs = append(errs, field.Forbidden(spec.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	errs = append(errs, validateLoadBalancerClass(svc, spec.Child("loadBalancerClass"))...)
	return append(errs, validateTrafficPolicies(svc, spec)...)
}

// validateLoadBalancerClass is kube's: a qualified name, on a LoadBalancer Service only.
func validateLoadBalancerClass(svc *corev1.Service, path *field.Path) field.ErrorList {
	switch class := svc.Spec.LoadBalancerClass; {
	case class == nil:
		return nil
	case svc.Spec.Type != corev1.ServiceTypeLoadBalancer:
		return field.ErrorList{field.Forbidden(path, "may only be used when `type` is 'LoadBalancer'")}
	default:
		return corevalidation.InvalidEach(path, *class, utilvalidation.IsQualifiedName(*class))
	}
}

func validateExternalName(svc *corev1.Service, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	s := &svc.Spec
	if s.ClusterIP != "" || len(s.ClusterIPs) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("clusterIPs"), "may not be set for ExternalName services"))
	}
	if s.IPFamilyPolicy != nil {
		errs = append(errs, field.Forbidden(spec.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
	}
	if len(s.IPFamilies) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("ipFamilies"), "may not be set for ExternalName services"))
	}
	if s.ExternalName == "" {
		return append(errs, field.Required(spec.Child("externalName"), ""))
	}
	errs = append(errs, corevalidation.InvalidEach(spec.Child("externalName"), s.ExternalName, utilvalidation.IsDNS1123Subdomain(strings.TrimSuffix(s.ExternalName, ".")))...)
	return errs
}

func validateServicePorts(svc *corev1.Service, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, p := range svc.Spec.Ports {
		pp := path.Index(i)
		switch {
		case p.Name == "" && len(svc.Spec.Ports) > 1:
			errs = append(errs, field.Required(pp.Child("name"), ""))
		case p.Name != "":
			errs = append(errs, corevalidation.InvalidEach(pp.Child("name"), p.Name, utilvalidation.IsDNS1123Label(p.Name))...)
			if names.Has(p.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		errs = append(errs, corevalidation.InvalidEach(pp.Child("port"), p.Port, utilvalidation.IsValidPortNum(int(p.Port)))...)
		if !slices.Contains(registry.ServiceProtocols, p.Protocol) {
			errs = append(errs, field.NotSupported(pp.Child("protocol"), p.Protocol, registry.ServiceProtocols))
		}
		if p.TargetPort.Type == intstr.String {
			errs = append(errs, corevalidation.InvalidEach(pp.Child("targetPort"), p.TargetPort, utilvalidation.IsValidPortName(p.TargetPort.StrVal))...)
		} else {
			errs = append(errs, corevalidation.InvalidEach(pp.Child("targetPort"), p.TargetPort, utilvalidation.IsValidPortNum(p.TargetPort.IntValue()))...)
		}
		errs = append(errs, validateAppProtocol(p.AppProtocol, pp.Child("appProtocol"))...)
		if p.NodePort != 0 {
			errs = append(errs, corevalidation.InvalidEach(pp.Child("nodePort"), p.NodePort, utilvalidation.IsValidPortNum(int(p.NodePort)))...)
		}
	}
	return errs
}

// validateServicePortsUnique: no node port on a ClusterIP Service, and ports and node
// ports unique per protocol, each its own pass over the ports as in kube.
func validateServicePortsUnique(svc *corev1.Service, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if svc.Spec.Type == corev1.ServiceTypeClusterIP { // kube stores an ExternalName's node ports, unused
		for i, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				errs = append(errs, field.Forbidden(path.Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}
	type portKey struct {
		port     int32
		protocol corev1.Protocol
	}
	seenNodePorts := sets.New[portKey]()
	for i, p := range svc.Spec.Ports {
		if key := (portKey{p.NodePort, p.Protocol}); p.NodePort != 0 && seenNodePorts.Has(key) {
			errs = append(errs, field.Duplicate(path.Index(i).Child("nodePort"), p.NodePort))
		} else {
			seenNodePorts.Insert(key)
		}
	}
	seenPorts := sets.New[portKey]()
	for i, p := range svc.Spec.Ports {
		if key := (portKey{p.Port, p.Protocol}); seenPorts.Has(key) {
			errs = append(errs, field.Duplicate(path.Index(i), internalServicePort{Port: p.Port, Protocol: p.Protocol}))
		} else {
			seenPorts.Insert(key)
		}
	}
	return errs
}

var (
	ipFamilies       = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	ipFamilyPolicies = []corev1.IPFamilyPolicy{corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}
)

// validateClusterIPsRelated is kube's ValidateServiceClusterIPsRelatedFields and the
// checks of the policy against the fields that its allocator makes before looking at the
// cluster's ranges (those are in initIPFamilies).
func validateClusterIPsRelated(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil // validateExternalName wants them all unset
	}
	if errs := validateClusterIPFields(svc, old); len(errs) > 0 {
		return errs
	}
	return singleStackPolicyErrors(svc)
}

// singleStackPolicyErrors refuse a SingleStack policy beside two cluster IPs or families.
func singleStackPolicyErrors(svc *corev1.Service) field.ErrorList {
	p := svc.Spec.IPFamilyPolicy
	if p == nil || *p != corev1.IPFamilyPolicySingleStack {
		return nil
	}
	var errs field.ErrorList
	policy := field.NewPath("spec", "ipFamilyPolicy")
	if len(svc.Spec.ClusterIPs) == 2 {
		errs = append(errs, field.Invalid(policy, *p, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
	}
	if len(svc.Spec.IPFamilies) == 2 {
		errs = append(errs, field.Invalid(policy, *p, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
	}
	return errs
}

// validateClusterIPFields is kube's ValidateServiceClusterIPsRelatedFields, in its order.
func validateClusterIPFields(svc, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	s, spec := &svc.Spec, field.NewPath("spec")
	ipsPath := spec.Child("clusterIPs")
	switch {
	case s.ClusterIP != "" && len(s.ClusterIPs) == 0:
		errs = append(errs, field.Required(ipsPath, ""))
	case s.ClusterIP != "" && s.ClusterIPs[0] != s.ClusterIP:
		errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "first value must match `clusterIP`"))
	case s.ClusterIP == "" && len(s.ClusterIPs) > 0:
		errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	for i, f := range s.IPFamilies {
		if !slices.Contains(ipFamilies, f) {
			errs = append(errs, field.NotSupported(spec.Child("ipFamilies").Index(i), f, ipFamilies))
		}
		if slices.Index(s.IPFamilies, f) < i {
			errs = append(errs, field.Duplicate(spec.Child("ipFamilies").Index(i), f))
		}
	}
	if p := s.IPFamilyPolicy; p != nil && !slices.Contains(ipFamilyPolicies, *p) {
		errs = append(errs, field.NotSupported(spec.Child("ipFamilyPolicy"), *p, ipFamilyPolicies))
	}
	var oldIPs []string // valid as they were, even if not any more
	if old != nil {
		oldIPs = old.Spec.ClusterIPs
	}
	invalidIPs := false
	for i, ip := range s.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(s.ClusterIPs) > 1 {
				invalidIPs = true
				errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		if ipErrs := legacyIP(oldIPs)(ipsPath.Index(i), ip); len(ipErrs) > 0 {
			invalidIPs = true
			errs = append(errs, ipErrs...)
		}
	}
	if len(s.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "may only hold up to 2 values"))
	}
	if invalidIPs {
		return errs // the checks below would only repeat the bad values
	}
	if dual, _ := netutils.IsDualStackIPStrings(s.ClusterIPs); len(s.ClusterIPs) > 1 && !dual {
		errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "may specify no more than one IP for each IP family"))
	}
	if isHeadless(svc) {
		return errs
	}
	for i, ip := range s.ClusterIPs {
		if i >= len(s.IPFamilies) {
			break
		}
		if f := s.IPFamilies[i]; slices.Contains(ipFamilies, f) && familyOf(ip) != f {
			errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an %s value as indicated by `ipFamilies[%d]`", f, i)))
		}
	}
	return errs
}

func validateTrafficPolicies(svc *corev1.Service, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	s := &svc.Spec
	externalPolicies := []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}
	switch {
	case !externallyAccessible(svc) && s.ExternalTrafficPolicy != "":
		errs = append(errs, field.Invalid(spec.Child("externalTrafficPolicy"), s.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
	case externallyAccessible(svc) && !slices.Contains(externalPolicies, s.ExternalTrafficPolicy):
		errs = append(errs, field.NotSupported(spec.Child("externalTrafficPolicy"), s.ExternalTrafficPolicy, externalPolicies))
	}
	if s.HealthCheckNodePort != 0 && !needsHealthCheckPort(svc) {
		errs = append(errs, field.Invalid(spec.Child("healthCheckNodePort"), s.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	}
	distributions := []string{corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferSameNode}
	if d := s.TrafficDistribution; d != nil && !slices.Contains(distributions, *d) {
		errs = append(errs, field.NotSupported(spec.Child("trafficDistribution"), *d, distributions))
	}
	internalPolicies := []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}
	if p := s.InternalTrafficPolicy; p != nil && !slices.Contains(internalPolicies, *p) {
		errs = append(errs, field.NotSupported(spec.Child("internalTrafficPolicy"), *p, internalPolicies))
	} else if p == nil && needsClusterIP(svc) {
		errs = append(errs, field.Required(spec.Child("internalTrafficPolicy"), ""))
	}
	return errs
}

// validateServiceUpdate is kube's ValidateServiceUpdate, in its order: the IP family fields
// alone when they are wrong (as its allocator checks them first), then what may not change,
// then the Service as on create.
func validateServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	if errs := validateClusterIPsRelated(svc, old); len(errs) > 0 {
		return errs
	}
	errs := validateServiceMeta(svc)
	if svc.Spec.Type != corev1.ServiceTypeExternalName && old.Spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, validateClusterIPsUpdate(svc, old)...)
		errs = append(errs, validateIPFamiliesUpdate(svc, old)...)
	}
	if lb := corev1.ServiceTypeLoadBalancer; svc.Spec.Type == lb && old.Spec.Type == lb && !equality.Semantic.DeepEqual(svc.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "loadBalancerClass"), svc.Spec.LoadBalancerClass, "may not change once set"))
	}
	if needsHealthCheckPort(old) && needsHealthCheckPort(svc) && svc.Spec.HealthCheckNodePort != old.Spec.HealthCheckNodePort {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "healthCheckNodePort"), "field is immutable"))
	}
	return append(errs, validateServiceSpec(svc, old)...)
}

// validateClusterIPsUpdate: a Service may gain or release its secondary cluster IP, never
// change one it has.
func validateClusterIPsUpdate(svc, old *corev1.Service) field.ErrorList {
	if isHeadless(svc) && isHeadless(old) {
		return nil
	}
	var errs field.ErrorList
	ips, oldIPs, path := svc.Spec.ClusterIPs, old.Spec.ClusterIPs, field.NewPath("spec", "clusterIPs")
	changed := field.Invalid(path.Index(0), ips, "may not change once set")
	switch {
	case len(oldIPs) == len(ips):
		for i := range oldIPs {
			if oldIPs[i] != ips[i] {
				errs = append(errs, field.Invalid(path.Index(i), ips, "may not change once set"))
			}
		}
	case len(oldIPs) > len(ips):
		if len(ips) == 0 {
			errs = append(errs, field.Invalid(path.Index(0), ips, "primary clusterIP can not be unset"))
		} else if ips[0] != oldIPs[0] {
			errs = append(errs, changed)
		}
		if len(ips) == 1 && !isSingleStack(svc) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), svc.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary clusterIP"))
		}
	case len(oldIPs) > 0 && ips[0] != oldIPs[0]:
		errs = append(errs, changed)
	}
	return errs
}

// validateIPFamiliesUpdate is validateClusterIPsUpdate for the IP families; a headless
// Service may change them. The values kube prints are its own, cluster IPs where it prints
// them.
func validateIPFamiliesUpdate(svc, old *corev1.Service) field.ErrorList {
	if isHeadless(svc) || isHeadless(old) {
		return nil
	}
	var errs field.ErrorList
	families, oldFamilies, path := svc.Spec.IPFamilies, old.Spec.IPFamilies, field.NewPath("spec", "ipFamilies").Index(0)
	switch {
	case len(oldFamilies) == len(families):
		for i := range oldFamilies {
			if oldFamilies[i] != families[i] {
				errs = append(errs, field.Invalid(path, families, "may not change once set"))
			}
		}
	case len(oldFamilies) > len(families):
		if len(svc.Spec.ClusterIPs) == 0 {
			errs = append(errs, field.Invalid(path, families, "primary ipFamily can not be unset"))
		}
		if len(families) > 0 && families[0] != oldFamilies[0] {
			errs = append(errs, field.Invalid(path, svc.Spec.ClusterIPs, "may not change once set"))
		}
		if len(families) == 1 && !isSingleStack(svc) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), svc.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary ipFamily"))
		}
	case len(oldFamilies) > 0 && families[0] != oldFamilies[0]:
		errs = append(errs, field.Invalid(path, svc.Spec.ClusterIPs, "may not change once set"))
	}
	return errs
}

func isSingleStack(svc *corev1.Service) bool {
	p := svc.Spec.IPFamilyPolicy
	return p != nil && *p == corev1.IPFamilyPolicySingleStack
}

// familyOf is the family of an IP address, "" if it is not one.
func familyOf(ip string) corev1.IPFamily {
	addr, err := netip.ParseAddr(ip)
	switch {
	case err != nil:
		return ""
	case addr.Unmap().Is4():
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// serviceExternalIP is the EXTERNAL-IP column.
func serviceExternalIP(svc *corev1.Service) string {
	s := &svc.Spec
	switch s.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(s.ExternalIPs) > 0 {
			return strings.Join(s.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		lb := sets.New[string]()
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				lb.Insert(in.IP)
			} else if in.Hostname != "" {
				lb.Insert(in.Hostname)
			}
		}
		all := append(sets.List(lb), s.ExternalIPs...)
		if len(all) == 0 {
			return "<pending>"
		}
		return strings.Join(all, ",")
	case corev1.ServiceTypeExternalName:
		return s.ExternalName
	}
	return "<unknown>"
}

// servicePorts is the PORT(S) column: "80/TCP,443:30443/TCP".
func servicePorts(ports []corev1.ServicePort) string {
	if len(ports) == 0 {
		return "<none>"
	}
	out := make([]string, len(ports))
	for i, p := range ports {
		out[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			out[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
	}
	return strings.Join(out, ",")
}

// internalServicePort is kube's internal core.ServicePort, the value its duplicate-port
// error shows: without JSON tags, a struct prints its Go field names.
type internalServicePort struct {
	Name        string
	Protocol    corev1.Protocol
	AppProtocol *string
	Port        int32
	TargetPort  intstr.IntOrString
	NodePort    int32
}

// serviceWarnings are kube-apiserver's warnings on a Service's create and update
// (pkg/api/service's GetWarningsForService), in its order and words: fields a Service of
// its kind ignores, deprecated ones, and addresses written in non-standard forms.
func serviceWarnings(svc *corev1.Service) []string {
	var out []string
	spec := field.NewPath("spec")
	if _, ok := svc.Annotations[corev1.DeprecatedAnnotationTopologyAwareHints]; ok {
		out = append(out, fmt.Sprintf("annotation %s is deprecated, please use %s instead", corev1.DeprecatedAnnotationTopologyAwareHints, corev1.AnnotationTopologyMode))
	}
	if svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		for i, ip := range svc.Spec.ClusterIPs {
			out = append(out, utilvalidation.GetWarningsForIP(spec.Child("clusterIPs").Index(i), ip)...)
		}
	}
	headless := svc.Spec.Type == corev1.ServiceTypeClusterIP && svc.Spec.ClusterIP == corev1.ClusterIPNone
	if headless {
		if svc.Spec.LoadBalancerIP != "" {
			out = append(out, "spec.loadBalancerIP is ignored for headless services")
		}
		if len(svc.Spec.ExternalIPs) > 0 {
			out = append(out, "spec.externalIPs is ignored for headless services")
		}
		if svc.Spec.SessionAffinity != corev1.ServiceAffinityNone {
			out = append(out, "spec.SessionAffinity is ignored for headless services")
		}
	}
	for i, ip := range svc.Spec.ExternalIPs {
		out = append(out, utilvalidation.GetWarningsForIP(spec.Child("externalIPs").Index(i), ip)...)
	}
	if len(svc.Spec.ExternalIPs) > 0 && !headless && svc.Spec.Type != corev1.ServiceTypeExternalName {
		out = append(out, "spec.externalIPs is deprecated and may no longer be implemented in some clusters")
	}
	if svc.Spec.LoadBalancerIP != "" {
		out = append(out, utilvalidation.GetWarningsForIP(spec.Child("loadBalancerIP"), svc.Spec.LoadBalancerIP)...)
	}
	for i, cidr := range svc.Spec.LoadBalancerSourceRanges {
		out = append(out, utilvalidation.GetWarningsForCIDR(spec.Child("loadBalancerSourceRanges").Index(i), cidr)...)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName && len(svc.Spec.ExternalIPs) > 0 {
		out = append(out, fmt.Sprintf("spec.externalIPs is ignored when spec.type is %q", corev1.ServiceTypeExternalName))
	}
	if svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ExternalName != "" {
		out = append(out, fmt.Sprintf("spec.externalName is ignored when spec.type is not %q", corev1.ServiceTypeExternalName))
	}
	if d := svc.Spec.TrafficDistribution; d != nil && *d == corev1.ServiceTrafficDistributionPreferClose {
		out = append(out, fmt.Sprintf("spec.trafficDistribution: %q is deprecated; use %q", corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone))
	}
	return out
}
