package core

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	"github.com/minik8s/minik8s/pkg/control/registry/networking"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// statusSteps is what the server does to an update through the status subresource: the
// kind's update validation where the status has none of its own.
func statusSteps(r registry.Rules, obj, old runtime.Object) field.ErrorList {
	if r.Default != nil {
		r.Default(obj)
	}
	if sr, ok := r.SubresourceUpdates["status"]; ok {
		return sr.Validate(obj, old)
	}
	return r.ValidateUpdate(obj, old)
}

// The load balancer addresses written to a Service's or an Ingress's status are checked as
// kube's ValidateServiceStatusUpdate and ValidateIngressStatusUpdate check them: an IP, a
// DNS name that is not an address, a Service's ipMode (VIP by default) only beside an ip
// and one of VIP and Proxy, and no load balancer on a Service of another type.
func TestLoadBalancerStatusValidation(t *testing.T) {
	lbService := func(ingress ...corev1.LoadBalancerIngress) (*corev1.Service, *corev1.Service) {
		svc := service("lb", corev1.ServicePort{Port: 80})
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		old := svc.DeepCopy()
		svc.Status.LoadBalancer.Ingress = ingress
		return svc, old
	}
	svc, old := lbService(corev1.LoadBalancerIngress{IP: "192.0.2.1"}, corev1.LoadBalancerIngress{Hostname: "lb.example.com"})
	registrytest.ExpectErrors(t, "an ip and a hostname", statusSteps(ServiceRules, svc, old))
	if m := svc.Status.LoadBalancer.Ingress[0].IPMode; m == nil || *m != corev1.LoadBalancerIPModeVIP {
		t.Errorf("ipMode of an ip defaulted to %v, want VIP", m)
	}
	svc, old = lbService(
		corev1.LoadBalancerIngress{Hostname: "lb.example.com", IPMode: ptr.To(corev1.LoadBalancerIPModeProxy)},
		corev1.LoadBalancerIngress{IP: "192.0.2.1", IPMode: ptr.To(corev1.LoadBalancerIPMode("Direct"))},
		corev1.LoadBalancerIngress{IP: "192.0.2.300", Hostname: "192.0.2.3"},
		corev1.LoadBalancerIngress{Hostname: "Bad_Name"},
	)
	errs := statusSteps(ServiceRules, svc, old)
	registrytest.ExpectErrors(t, "bad addresses", errs,
		"status.loadBalancer.ingress[0].ipMode: FieldValueForbidden",
		"status.loadBalancer.ingress[1].ipMode: FieldValueNotSupported",
		"status.loadBalancer.ingress[2].ip: FieldValueInvalid",
		"status.loadBalancer.ingress[2].hostname: FieldValueInvalid",
		"status.loadBalancer.ingress[3].hostname: FieldValueInvalid")
	registrytest.ExpectMessage(t, errs, "status.loadBalancer.ingress[0].ipMode", "may not be specified when `ip` is not set")
	registrytest.ExpectMessage(t, errs, "status.loadBalancer.ingress[2].hostname", "must be a DNS name, not an IP address")

	svc, old = lbService(corev1.LoadBalancerIngress{IP: "192.0.2.1"})
	svc.Spec.Type, old.Spec.Type = corev1.ServiceTypeClusterIP, corev1.ServiceTypeClusterIP
	errs = statusSteps(ServiceRules, svc, old)
	registrytest.ExpectErrors(t, "a ClusterIP Service's load balancer", errs, "status.loadBalancer.ingress: FieldValueForbidden")
	registrytest.ExpectMessage(t, errs, "status.loadBalancer.ingress", "may only be used when `spec.type` is 'LoadBalancer'")

	ing := &networkingv1.Ingress{ObjectMeta: registrytest.ObjMeta("web")}
	oldIng := ing.DeepCopy()
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}, {IP: "bad"}, {Hostname: "2001:db8::1"}}
	registrytest.ExpectErrors(t, "an Ingress's addresses", statusSteps(networking.IngressRules, ing, oldIng),
		"status.loadBalancer.ingress[1].ip: FieldValueInvalid",
		"status.loadBalancer.ingress[2].hostname: FieldValueInvalid", "status.loadBalancer.ingress[2].hostname: FieldValueInvalid")
}
