// Package networking holds the rules of the networking.k8s.io/v1 kinds: NetworkPolicies,
// Ingresses, IngressClasses, ServiceCIDRs and IPAddresses, as Kubernetes'
// pkg/registry/networking has them.
package networking

import (
	"fmt"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// networking.k8s.io/v1 as Kubernetes' networking strategies, defaulters, validation and
// printers have it. No controller is implied: NetworkPolicies are enforced by minilet's
// pkg/network/policy, Ingresses are only stored.

var NetworkPolicyRules = registry.Rules{
	Generation: true,
	Default: func(obj runtime.Object) {
		defaultNetworkPolicy(obj.(*networkingv1.NetworkPolicy))
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateNetworkPolicy(obj.(*networkingv1.NetworkPolicy))
	},
	Warnings: func(obj, _ runtime.Object) []string {
		return ipBlockWarnings(obj.(*networkingv1.NetworkPolicy))
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Pod-Selector", "string", networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"], false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			np := obj.(*networkingv1.NetworkPolicy)
			return []any{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), registry.Age(np.CreationTimestamp)}
		},
	},
}

// defaultNetworkPolicy: policyTypes default to Ingress, plus Egress when egress rules are
// given; a port's protocol defaults to TCP.
func defaultNetworkPolicy(np *networkingv1.NetworkPolicy) {
	s := &np.Spec
	if len(s.PolicyTypes) == 0 {
		s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(s.Egress) != 0 {
			s.PolicyTypes = append(s.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
	defaultPorts := func(ports []networkingv1.NetworkPolicyPort) {
		for i := range ports {
			if ports[i].Protocol == nil {
				tcp := corev1.ProtocolTCP
				ports[i].Protocol = &tcp
			}
		}
	}
	for i := range s.Ingress {
		defaultPorts(s.Ingress[i].Ports)
	}
	for i := range s.Egress {
		defaultPorts(s.Egress[i].Ports)
	}
}

var selectorOptions = metav1validation.LabelSelectorValidationOptions{}

func validateNetworkPolicy(np *networkingv1.NetworkPolicy) field.ErrorList {
	errs := registry.ValidateMeta(np, true, validation.NameIsDNSSubdomain)
	spec, s := field.NewPath("spec"), &np.Spec
	errs = append(errs, metav1validation.ValidateLabelSelector(&s.PodSelector, selectorOptions, spec.Child("podSelector"))...)
	for i, rule := range s.Ingress {
		p := spec.Child("ingress").Index(i)
		for j := range rule.Ports {
			errs = append(errs, validateNetworkPolicyPort(&rule.Ports[j], p.Child("ports").Index(j))...)
		}
		for j := range rule.From {
			errs = append(errs, validateNetworkPolicyPeer(&rule.From[j], p.Child("from").Index(j))...)
		}
	}
	for i, rule := range s.Egress {
		p := spec.Child("egress").Index(i)
		for j := range rule.Ports {
			errs = append(errs, validateNetworkPolicyPort(&rule.Ports[j], p.Child("ports").Index(j))...)
		}
		for j := range rule.To {
			errs = append(errs, validateNetworkPolicyPeer(&rule.To[j], p.Child("to").Index(j))...)
		}
	}
	types := []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}
	if len(s.PolicyTypes) > len(types) {
		return append(errs, field.Invalid(spec.Child("policyTypes"), s.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range s.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(spec.Child("policyTypes").Index(i), t, types))
		}
	}
	return errs
}

func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pr := port.Protocol; pr != nil && *pr != corev1.ProtocolTCP && *pr != corev1.ProtocolUDP && *pr != corev1.ProtocolSCTP {
		errs = append(errs, field.NotSupported(path.Child("protocol"), *pr, []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}))
	}
	switch {
	case port.Port == nil:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(path.Child("endPort"), *port.EndPort, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == intstr.Int:
		errs = append(errs, registry.ValidatePort(port.Port.IntVal, path.Child("port"))...)
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				errs = append(errs, field.Invalid(path.Child("endPort"), port.Port.IntVal, "must be greater than or equal to `port`"))
			}
			errs = append(errs, registry.ValidatePort(*port.EndPort, path.Child("endPort"))...)
		}
	default:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(path.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
		}
		errs = append(errs, corevalidation.InvalidEach(path.Child("port"), port.Port.StrVal, utilvalidation.IsValidPortName(port.Port.StrVal))...)
	}
	return errs
}

func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	peers := 0
	if peer.PodSelector != nil {
		peers++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.PodSelector, selectorOptions, path.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		peers++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, selectorOptions, path.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		peers++
		errs = append(errs, validateIPBlock(peer.IPBlock, path.Child("ipBlock"))...)
	}
	switch {
	case peers == 0:
		errs = append(errs, field.Required(path, "must specify a peer"))
	case peers > 1 && peer.IPBlock != nil:
		errs = append(errs, field.Forbidden(path, "may not specify both ipBlock and another peer"))
	}
	return errs
}

// validateIPBlock: a valid CIDR whose excepts are strict subsets of it. Both are kube's
// legacy CIDR fields, strictly parsed (StrictIPCIDRValidation, on in 1.36) but not held to
// the canonical form: ipBlockWarnings names what is not in it.
func validateIPBlock(b *networkingv1.IPBlock, path *field.Path) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(path.Child("cidr"), "")}
	}
	errs := utilvalidation.IsValidCIDRForLegacyField(path.Child("cidr"), b.CIDR, true, nil)
	_, cidr, err := netutils.ParseCIDRSloppy(b.CIDR)
	if err != nil {
		return errs
	}
	cidrBits, _ := cidr.Mask.Size()
	for i, e := range b.Except {
		p := path.Child("except").Index(i)
		errs = append(errs, utilvalidation.IsValidCIDRForLegacyField(p, e, true, nil)...)
		_, except, err := netutils.ParseCIDRSloppy(e)
		if err != nil {
			continue
		}
		if exceptBits, _ := except.Mask.Size(); !cidr.Contains(except.IP) || cidrBits >= exceptBits {
			errs = append(errs, field.Invalid(p, e, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}

// ipBlockWarnings are kube's warnings of a policy's ipBlocks: a CIDR or except not in the
// canonical form (an IPv6 one; the rest are refused).
func ipBlockWarnings(np *networkingv1.NetworkPolicy) []string {
	var out []string
	block := func(b *networkingv1.IPBlock, path *field.Path) {
		if b == nil {
			return
		}
		out = append(out, utilvalidation.GetWarningsForCIDR(path.Child("cidr"), b.CIDR)...)
		for k, e := range b.Except {
			out = append(out, utilvalidation.GetWarningsForCIDR(path.Child("except").Index(k), e)...)
		}
	}
	spec := field.NewPath("spec")
	for i, r := range np.Spec.Ingress {
		for j := range r.From {
			block(r.From[j].IPBlock, spec.Child("ingress").Index(i).Child("from").Index(j).Child("ipBlock"))
		}
	}
	for i, r := range np.Spec.Egress {
		for j := range r.To {
			block(r.To[j].IPBlock, spec.Child("egress").Index(i).Child("to").Index(j).Child("ipBlock"))
		}
	}
	return out
}

var IngressRules = registry.Rules{
	Generation: true,
	// kube's ingressStrategy warns of the deprecated class annotation on create only.
	Warnings: func(obj, old runtime.Object) []string {
		const key = "kubernetes.io/ingress.class"
		if ing := obj.(*networkingv1.Ingress); old == nil && ing.Spec.IngressClassName == nil {
			if _, ok := ing.Annotations[key]; ok {
				return []string{fmt.Sprintf("annotation %q is deprecated, please use 'spec.ingressClassName' instead", key)}
			}
		}
		return nil
	},
	PrepareCreate: func(obj runtime.Object) {
		obj.(*networkingv1.Ingress).Status = networkingv1.IngressStatus{}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateIngressCreate(obj.(*networkingv1.Ingress))
	},
	ValidateUpdate: func(obj, _ runtime.Object) field.ErrorList {
		return validateIngress(obj.(*networkingv1.Ingress))
	},
	SubresourceUpdates: map[string]registry.SubresourceRules{"status": registry.IngressStatusUpdate},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Class", "string", networkingv1.IngressSpec{}.SwaggerDoc()["ingressClassName"], false),
			registry.Column("Hosts", "string", networkingv1.IngressRule{}.SwaggerDoc()["host"], false),
			registry.Column("Address", "string", networkingv1.IngressStatus{}.SwaggerDoc()["loadBalancer"], false),
			registry.Column("Ports", "string", "Ports of TLS configurations that open", false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			ing := obj.(*networkingv1.Ingress)
			ports := "80"
			if len(ing.Spec.TLS) != 0 {
				ports = "80, 443"
			}
			return []any{ing.Name, registry.StringOr(ing.Spec.IngressClassName, "<none>"), ingressHosts(ing.Spec.Rules),
				ingressAddress(ing.Status.LoadBalancer), ports, registry.Age(ing.CreationTimestamp)}
		},
	},
}

// ingressHosts is the HOSTS column: up to three hosts, then "+ N more...", "*" for none.
func ingressHosts(rules []networkingv1.IngressRule) string {
	const most = 3
	var hosts []string
	for _, r := range rules {
		if len(hosts) < most && r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) == 0 {
		return "*"
	}
	text := strings.Join(hosts, ",")
	if len(rules) > most {
		text += fmt.Sprintf(" + %d more...", len(rules)-most)
	}
	return text
}

func ingressAddress(lb networkingv1.IngressLoadBalancerStatus) string {
	var addrs []string
	for _, in := range lb.Ingress {
		if in.IP != "" {
			addrs = append(addrs, in.IP)
		} else if in.Hostname != "" {
			addrs = append(addrs, in.Hostname)
		}
	}
	text := strings.Join(addrs, ",")
	if len(text) > 16 {
		text = text[:13] + "..."
	}
	return text
}

// pathTypes are the supported path types, sorted as kube lists them.
var pathTypes = []networkingv1.PathType{networkingv1.PathTypeExact, networkingv1.PathTypeImplementationSpecific, networkingv1.PathTypePrefix}

// validateIngressCreate is validateIngress and, on create only, kube's check that the old
// kubernetes.io/ingress.class annotation names the same class as ingressClassName.
func validateIngressCreate(ing *networkingv1.Ingress) field.ErrorList {
	errs := validateIngress(ing)
	if class, ok := ing.Annotations[networkingv1beta1.AnnotationIngressClass]; ok && ing.Spec.IngressClassName != nil && class != *ing.Spec.IngressClassName {
		errs = append(errs, field.Invalid(field.NewPath("annotations").Child(networkingv1beta1.AnnotationIngressClass), class, "must match `ingressClassName` when both are specified"))
	}
	return errs
}

// validateIngress checks an Ingress as kube-apiserver does, in its order: the default
// backend, the rules, tls, the class name.
func validateIngress(ing *networkingv1.Ingress) field.ErrorList {
	errs := registry.ValidateMeta(ing, true, validation.NameIsDNSSubdomain)
	spec, s := field.NewPath("spec"), &ing.Spec
	if s.DefaultBackend == nil && len(s.Rules) == 0 {
		errs = append(errs, field.Invalid(spec, s.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if s.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(s.DefaultBackend, spec.Child("defaultBackend"))...)
	}
	for i, rule := range s.Rules {
		p := spec.Child("rules").Index(i)
		if rule.Host != "" {
			errs = append(errs, validateIngressHost(rule.Host, p.Child("host"))...)
		}
		if rule.HTTP == nil {
			continue
		}
		hp := p.Child("http", "paths")
		if len(rule.HTTP.Paths) == 0 {
			errs = append(errs, field.Required(hp, ""))
		}
		for j, path := range rule.HTTP.Paths {
			errs = append(errs, validateIngressPath(&path, hp.Index(j))...)
		}
	}
	for i, tls := range s.TLS {
		for j, host := range tls.Hosts {
			errs = append(errs, corevalidation.InvalidEach(spec.Child("tls").Index(i).Child("hosts").Index(j), host, dnsNameCheck(host)(host))...)
		}
		if tls.SecretName != "" {
			errs = append(errs, corevalidation.InvalidEach(spec.Child("tls").Index(i).Child("secretName"), tls.SecretName, validation.NameIsDNSSubdomain(tls.SecretName, false))...)
		}
	}
	if s.IngressClassName != nil {
		errs = append(errs, corevalidation.InvalidEach(spec.Child("ingressClassName"), *s.IngressClassName, validation.NameIsDNSSubdomain(*s.IngressClassName, false))...)
	}
	return errs
}

// dnsNameCheck is the check of an Ingress host: a wildcard DNS subdomain if it has a "*".
func dnsNameCheck(host string) func(string) []string {
	if strings.Contains(host, "*") {
		return utilvalidation.IsWildcardDNS1123Subdomain
	}
	return utilvalidation.IsDNS1123Subdomain
}

func validateIngressHost(host string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if netutils.ParseIPSloppy(host) != nil {
		errs = append(errs, field.Invalid(path, host, "must be a DNS name, not an IP address"))
	}
	return append(errs, corevalidation.InvalidEach(path, host, dnsNameCheck(host)(host))...)
}

// The sequences and endings an Exact or Prefix path may not have, as kube refuses them.
var (
	invalidIngressPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidIngressPathSuffixes  = []string{"/..", "/."}
)

func validateIngressPath(p *networkingv1.HTTPIngressPath, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case p.PathType == nil:
		return field.ErrorList{field.Required(path.Child("pathType"), "pathType must be specified")}
	case *p.PathType == networkingv1.PathTypeExact || *p.PathType == networkingv1.PathTypePrefix:
		if !strings.HasPrefix(p.Path, "/") {
			errs = append(errs, field.Invalid(path.Child("path"), p.Path, "must be an absolute path"))
		}
		for _, seq := range invalidIngressPathSequences {
			if strings.Contains(p.Path, seq) {
				errs = append(errs, field.Invalid(path.Child("path"), p.Path, fmt.Sprintf("must not contain '%s'", seq)))
			}
		}
		for _, suffix := range invalidIngressPathSuffixes {
			if strings.HasSuffix(p.Path, suffix) {
				errs = append(errs, field.Invalid(path.Child("path"), p.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
			}
		}
	case *p.PathType == networkingv1.PathTypeImplementationSpecific:
		if p.Path != "" && !strings.HasPrefix(p.Path, "/") {
			errs = append(errs, field.Invalid(path.Child("path"), p.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("pathType"), *p.PathType, pathTypes))
	}
	return append(errs, validateIngressBackend(&p.Backend, path.Child("backend"))...)
}

func validateIngressBackend(b *networkingv1.IngressBackend, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Service != nil && b.Resource != nil:
		return field.ErrorList{field.Invalid(path, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		errs = append(errs, validateTypedReference(b.Resource.APIGroup, b.Resource.Kind, b.Resource.Name, path.Child("resource"))...)
	case b.Service != nil:
		sp := path.Child("service")
		if b.Service.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		} else {
			// A DNS label, as kube's RelaxedServiceNameValidation (on by default) has it.
			errs = append(errs, corevalidation.InvalidEach(sp.Child("name"), b.Service.Name, validation.NameIsDNSLabel(b.Service.Name, false))...)
		}
		port := b.Service.Port
		switch {
		case port.Name != "" && port.Number != 0:
			errs = append(errs, field.Invalid(path, "", "cannot set both port name & port number"))
		case port.Name != "":
			errs = append(errs, corevalidation.InvalidEach(sp.Child("port", "name"), port.Name, utilvalidation.IsValidPortName(port.Name))...)
		case port.Number != 0:
			errs = append(errs, registry.ValidatePort(port.Number, sp.Child("port", "number"))...)
		default:
			errs = append(errs, field.Required(path, "port name or number is required"))
		}
	default:
		errs = append(errs, field.Invalid(path, "", "resource or service backend is required"))
	}
	return errs
}

// validateTypedReference checks the apiGroup, kind and name of an Ingress's resource backend
// or an IngressClass's parameters.
func validateTypedReference(apiGroup *string, kind, name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if apiGroup != nil {
		errs = append(errs, corevalidation.InvalidEach(path.Child("apiGroup"), *apiGroup, utilvalidation.IsDNS1123Subdomain(*apiGroup))...)
	}
	for _, f := range []struct{ name, value string }{{"kind", kind}, {"name", name}} {
		if f.value == "" {
			errs = append(errs, field.Required(path.Child(f.name), ""))
		} else {
			errs = append(errs, corevalidation.InvalidEach(path.Child(f.name), f.value, content.IsPathSegmentName(f.value))...)
		}
	}
	return errs
}

var IngressClassRules = registry.Rules{
	Generation: true,
	Default: func(obj runtime.Object) {
		if p := obj.(*networkingv1.IngressClass).Spec.Parameters; p != nil && p.Scope == nil {
			scope := networkingv1.IngressClassParametersReferenceScopeCluster
			p.Scope = &scope
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateIngressClass(obj.(*networkingv1.IngressClass))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		ic, o := obj.(*networkingv1.IngressClass), old.(*networkingv1.IngressClass)
		return append(validateIngressClass(ic), registry.Immutable(ic.Spec.Controller, o.Spec.Controller, field.NewPath("spec", "controller"))...)
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Controller", "string", networkingv1.IngressClassSpec{}.SwaggerDoc()["controller"], false),
			registry.Column("Parameters", "string", networkingv1.IngressClassSpec{}.SwaggerDoc()["parameters"], false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			ic := obj.(*networkingv1.IngressClass)
			params := "<none>"
			if p := ic.Spec.Parameters; p != nil {
				params = p.Kind
				if p.APIGroup != nil {
					params += "." + *p.APIGroup
				}
				params += "/" + p.Name
			}
			return []any{ic.Name, ic.Spec.Controller, params, registry.Age(ic.CreationTimestamp)}
		},
	},
}

const maxIngressClassControllerLen = 250

func validateIngressClass(ic *networkingv1.IngressClass) field.ErrorList {
	errs := registry.ValidateMeta(ic, false, validation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	if len(ic.Spec.Controller) > maxIngressClassControllerLen {
		errs = append(errs, field.TooLong(spec.Child("controller"), "", maxIngressClassControllerLen))
	}
	errs = append(errs, utilvalidation.IsDomainPrefixedPath(spec.Child("controller"), ic.Spec.Controller)...)
	p := ic.Spec.Parameters
	if p == nil {
		return errs
	}
	pp := spec.Child("parameters")
	errs = append(errs, validateTypedReference(p.APIGroup, p.Kind, p.Name, pp)...)
	scopes := []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}
	switch {
	case p.Scope == nil:
		errs = append(errs, field.Required(pp.Child("scope"), ""))
	case *p.Scope == networkingv1.IngressClassParametersReferenceScopeNamespace:
		if p.Namespace == nil {
			errs = append(errs, field.Required(pp.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
		} else {
			errs = append(errs, corevalidation.InvalidEach(pp.Child("namespace"), *p.Namespace, validation.ValidateNamespaceName(*p.Namespace, false))...)
		}
	case *p.Scope == networkingv1.IngressClassParametersReferenceScopeCluster:
		if p.Namespace != nil {
			errs = append(errs, field.Forbidden(pp.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		errs = append(errs, field.NotSupported(pp.Child("scope"), *p.Scope, scopes))
	}
	return errs
}
