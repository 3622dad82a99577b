package corevalidation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kube's limits of a pod's DNS configuration, from the C library's resolver.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

var dnsPolicies = []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}

// validatePodDNS is kube's validation of a pod spec's DNS fields (validateDNSPolicy,
// validatePodDNSConfig, hostname and subdomain), for a pod and a pod template alike: a
// known dnsPolicy; with None, a dnsConfig naming a nameserver; at most 3 nameservers, each
// an IP address (strictly parsed, as StrictIPCIDRValidation does in 1.36); at most 32
// search domains of 2048 characters in all, each a DNS subdomain where underscores are
// allowed and "." stands alone (RelaxedDNSSearchValidation, GA); named options; hostname
// and subdomain DNS labels.
func validatePodDNS(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	// An empty dnsPolicy (kube's Required value) never reaches validation: defaulting
	// makes it ClusterFirst first.
	if p := spec.DNSPolicy; p != "" && !slices.Contains(dnsPolicies, p) {
		errs = append(errs, field.NotSupported(path.Child("dnsPolicy"), p, dnsPolicies))
	}
	errs = append(errs, validatePodDNSConfig(spec.DNSConfig, spec.DNSPolicy, path.Child("dnsConfig"))...)
	if spec.Hostname != "" {
		errs = append(errs, InvalidEach(path.Child("hostname"), spec.Hostname, utilvalidation.IsDNS1123Label(spec.Hostname))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, InvalidEach(path.Child("subdomain"), spec.Subdomain, utilvalidation.IsDNS1123Label(spec.Subdomain))...)
	}
	return errs
}

// validateHostnameOverride is kube's validatePodHostName: an override of the pod's
// hostname is a DNS subdomain of at most 64 characters (the kernel's limit), and neither
// a fully qualified hostname nor the node's, which it would contradict, goes with it.
func validateHostnameOverride(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	h := spec.HostnameOverride
	if h == nil {
		return nil
	}
	path = path.Child("hostnameOverride")
	var errs field.ErrorList
	if spec.SetHostnameAsFQDN != nil && *spec.SetHostnameAsFQDN {
		errs = append(errs, field.Forbidden(path, "may not be specified when setHostnameAsFQDN is true"))
	}
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(path, "may not be specified when hostNetwork is true"))
	}
	if len(*h) > 64 {
		errs = append(errs, field.TooLong(path, "", 64))
	}
	return append(errs, InvalidEach(path, *h, utilvalidation.IsDNS1123Subdomain(*h))...)
}

func validatePodDNSConfig(c *corev1.PodDNSConfig, policy corev1.DNSPolicy, path *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if c == nil {
			return field.ErrorList{field.Required(path, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone))}
		}
		if len(c.Nameservers) == 0 {
			return field.ErrorList{field.Required(path.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", corev1.DNSNone))}
		}
	}
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	if len(c.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(path.Child("nameservers"), c.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range c.Nameservers {
		errs = append(errs, utilvalidation.IsValidIPForLegacyField(path.Child("nameservers").Index(i), ns, true, nil)...)
	}
	if len(c.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(path.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(c.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(path.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, search := range c.Searches {
		if search == "." {
			continue
		}
		search = strings.TrimSuffix(search, ".")
		errs = append(errs, InvalidEach(path.Child("searches").Index(i), search, utilvalidation.IsDNS1123SubdomainWithUnderscore(search))...)
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(path.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}
