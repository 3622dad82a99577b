package registry

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// The status subresources of Services and Ingresses validate the load balancer addresses a
// controller writes, as kube's ValidateServiceStatusUpdate and ValidateIngressStatusUpdate.
var (
	ServiceStatusUpdate = SubresourceRules{Validate: func(obj, old runtime.Object) field.ErrorList {
		svc, o := obj.(*corev1.Service), old.(*corev1.Service)
		return validateServiceLBStatus(&svc.Status.LoadBalancer, &o.Status.LoadBalancer, svc.Spec.Type)
	}}
	IngressStatusUpdate = SubresourceRules{Validate: func(obj, old runtime.Object) field.ErrorList {
		lb, o := obj.(*networkingv1.Ingress).Status.LoadBalancer, old.(*networkingv1.Ingress).Status.LoadBalancer
		var oldIPs []string
		for _, in := range o.Ingress {
			oldIPs = append(oldIPs, in.IP)
		}
		var errs field.ErrorList
		for i, in := range lb.Ingress {
			errs = append(errs, validateLBAddress(field.NewPath("status", "loadBalancer", "ingress").Index(i), in.IP, in.Hostname, oldIPs)...)
		}
		return errs
	}}
)

var lbIPModes = sets.New(corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy)

// validateServiceLBStatus is kube's ValidateLoadBalancerStatus.
func validateServiceLBStatus(lb, old *corev1.LoadBalancerStatus, typ corev1.ServiceType) field.ErrorList {
	path := field.NewPath("status", "loadBalancer", "ingress")
	if typ != corev1.ServiceTypeLoadBalancer && len(lb.Ingress) > 0 {
		return field.ErrorList{field.Forbidden(path, "may only be used when `spec.type` is 'LoadBalancer'")}
	}
	var oldIPs []string
	for _, in := range old.Ingress {
		oldIPs = append(oldIPs, in.IP)
	}
	var errs field.ErrorList
	for i, in := range lb.Ingress {
		at := path.Index(i)
		errs = append(errs, validateLBAddress(at, in.IP, in.Hostname, oldIPs)...)
		switch {
		case in.IPMode == nil && in.IP != "":
			errs = append(errs, field.Required(at.Child("ipMode"), "must be specified when `ip` is set"))
		case in.IPMode != nil && in.IP == "":
			errs = append(errs, field.Forbidden(at.Child("ipMode"), "may not be specified when `ip` is not set"))
		case in.IPMode != nil && !lbIPModes.Has(*in.IPMode):
			errs = append(errs, field.NotSupported(at.Child("ipMode"), in.IPMode, sets.List(lbIPModes)))
		}
	}
	return errs
}

// validateLBAddress checks a load balancer's ip (an address it had may stay as written) and
// hostname (a DNS name, not an address).
func validateLBAddress(at *field.Path, ip, hostname string, oldIPs []string) field.ErrorList {
	var errs field.ErrorList
	if ip != "" {
		errs = append(errs, utilvalidation.IsValidIPForLegacyField(at.Child("ip"), ip, true, oldIPs)...)
	}
	if hostname != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(hostname) {
			errs = append(errs, field.Invalid(at.Child("hostname"), hostname, msg))
		}
		if netutils.ParseIPSloppy(hostname) != nil {
			errs = append(errs, field.Invalid(at.Child("hostname"), hostname, "must be a DNS name, not an IP address"))
		}
	}
	return errs
}
