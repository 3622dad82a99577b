package networking

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestIngressValidationMessages: an invalid Ingress or IngressClass is refused with
// kube-apiserver's messages, in its order (rules, tls, class, then the class annotation).
func TestIngressValidationMessages(t *testing.T) {
	prefix, exact, specific := networkingv1.PathTypePrefix, networkingv1.PathTypeExact, networkingv1.PathTypeImplementationSpecific
	service := func(name string, port networkingv1.ServiceBackendPort) networkingv1.IngressBackend {
		return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: port}}
	}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default",
		Annotations: map[string]string{networkingv1beta1.AnnotationIngressClass: "other"}},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("Nginx"),
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{"a_b"}}},
			Rules: []networkingv1.IngressRule{{Host: "10.0.0.1", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
				{Path: "/a/../b", PathType: &prefix, Backend: service("1web", networkingv1.ServiceBackendPort{Name: "http", Number: 80})},
				{Path: "/x/.", PathType: &exact, Backend: service("", networkingv1.ServiceBackendPort{})},
				{Path: "/r", PathType: &specific, Backend: networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{APIGroup: ptr.To("Ex"), Name: "a/b"}}},
				{Path: "/p%2Fq", PathType: &prefix, Backend: service("web", networkingv1.ServiceBackendPort{Number: 70000})},
				{Path: "/", PathType: ptr.To(networkingv1.PathType("Bogus")), Backend: service("web", networkingv1.ServiceBackendPort{Name: "http"})},
			}}}}},
		}}
	registrytest.ExpectMessages(t, "ingress", IngressRules.Validate(ing),
		`spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address`,
		`spec.rules[0].http.paths[0].path: Invalid value: "/a/../b": must not contain '/../'`,
		`spec.rules[0].http.paths[0].backend: Invalid value: "": cannot set both port name & port number`,
		`spec.rules[0].http.paths[1].path: Invalid value: "/x/.": cannot end with '/.'`,
		`spec.rules[0].http.paths[1].backend.service.name: Required value`,
		`spec.rules[0].http.paths[1].backend: Required value: port name or number is required`,
		`spec.rules[0].http.paths[2].backend.resource.apiGroup: Invalid value: "Ex": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		`spec.rules[0].http.paths[2].backend.resource.kind: Required value`,
		`spec.rules[0].http.paths[2].backend.resource.name: Invalid value: "a/b": may not contain '/'`,
		`spec.rules[0].http.paths[3].path: Invalid value: "/p%2Fq": must not contain '%2F'`,
		`spec.rules[0].http.paths[3].backend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive`,
		`spec.rules[0].http.paths[4].pathType: Unsupported value: "Bogus": supported values: "Exact", "ImplementationSpecific", "Prefix"`,
		`spec.tls[0].hosts[0]: Invalid value: "a_b": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		`spec.ingressClassName: Invalid value: "Nginx": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		"annotations.kubernetes.io/ingress.class: Invalid value: \"other\": must match `ingressClassName` when both are specified",
	)

	ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: networkingv1.IngressClassSpec{
		Controller: "example.com",
		Parameters: &networkingv1.IngressClassParametersReference{Kind: "a/b", Name: "p",
			Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace), Namespace: ptr.To("Bad")},
	}}
	// An Ingress whose annotation differs from its class may be updated (kube checks it on create only).
	if errs := IngressRules.ValidateUpdate(ing, ing); len(errs) != len(ing.Spec.Rules[0].HTTP.Paths)+9 {
		t.Errorf("update: %v", errs.ToAggregate())
	}
	registrytest.ExpectMessages(t, "ingress class", IngressClassRules.Validate(ic),
		`spec.controller: Invalid value: "example.com": must be a domain-prefixed path (such as "acme.io/foo")`,
		`spec.parameters.kind: Invalid value: "a/b": may not contain '/'`,
		`spec.parameters.namespace: Invalid value: "Bad": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
	)
	ic.Spec.Parameters.Scope = ptr.To("Bogus")
	registrytest.ExpectMessages(t, "ingress class scope", IngressClassRules.Validate(ic),
		`spec.controller: Invalid value: "example.com": must be a domain-prefixed path (such as "acme.io/foo")`,
		`spec.parameters.kind: Invalid value: "a/b": may not contain '/'`,
		`spec.parameters.scope: Unsupported value: "Bogus": supported values: "Cluster", "Namespace"`,
	)
}
