package core

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The checks of Kubernetes v1.36's ValidateService that users meet on kubectl create/apply.
func TestServiceValidationAsKubernetes(t *testing.T) {
	// Two ports with the same number and protocol: a duplicate (the same number over UDP is not).
	svc := service("dup", corev1.ServicePort{Name: "a", Port: 80}, corev1.ServicePort{Name: "b", Port: 80}, corev1.ServicePort{Name: "c", Port: 80, Protocol: corev1.ProtocolUDP})
	errs := registrytest.CreateSteps(ServiceRules, svc)
	registrytest.ExpectErrors(t, "duplicate port", errs, "spec.ports[1]: FieldValueDuplicate")
	// kube shows its internal ServicePort, which has no JSON tags (kube-apiserver v1.36.3's answer).
	registrytest.ExpectMessage(t, errs, "spec.ports[1]", `Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}`)

	// RelaxedServiceNameValidation (beta, on in v1.36): a DNS label, so it may start with a digit.
	registrytest.ExpectErrors(t, "name starting with a digit", registrytest.CreateSteps(ServiceRules, service("1web", corev1.ServicePort{Port: 80})))
	registrytest.ExpectErrors(t, "name with a dot", registrytest.CreateSteps(ServiceRules, service("web.a", corev1.ServicePort{Port: 80})), "metadata.name: FieldValueInvalid")

	// Fields of externally-accessible Services on a ClusterIP one: Invalid, as Kubernetes.
	svc = service("local", corev1.ServicePort{Port: 80})
	svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = corev1.ServiceExternalTrafficPolicyLocal, 30001
	errs = registrytest.CreateSteps(ServiceRules, svc)
	registrytest.ExpectErrors(t, "traffic policy fields on ClusterIP", errs, "spec.externalTrafficPolicy: FieldValueInvalid", "spec.healthCheckNodePort: FieldValueInvalid")
	registrytest.ExpectMessage(t, errs, "spec.externalTrafficPolicy", "may only be set for externally-accessible services")

	// A ClusterIP Service with external IPs is externally accessible: its policy defaults to Cluster.
	svc = service("ext-ips", corev1.ServicePort{Port: 80})
	svc.Spec.ExternalIPs = []string{"192.0.2.10"}
	registrytest.ExpectErrors(t, "external IPs", registrytest.CreateSteps(ServiceRules, svc))
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Errorf("externalTrafficPolicy of a ClusterIP Service with external IPs = %q, want Cluster", svc.Spec.ExternalTrafficPolicy)
	}

	// trafficDistribution: one of the three values (PreferSameTrafficDistribution is GA).
	for _, v := range []string{corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferSameNode} {
		svc = service("td", corev1.ServicePort{Port: 80})
		svc.Spec.TrafficDistribution = &v
		registrytest.ExpectErrors(t, "trafficDistribution "+v, registrytest.CreateSteps(ServiceRules, svc))
	}
	bogus := "Nearby"
	svc.Spec.TrafficDistribution = &bogus
	registrytest.ExpectErrors(t, "unknown trafficDistribution", registrytest.CreateSteps(ServiceRules, svc), "spec.trafficDistribution: FieldValueNotSupported")
}

func TestServiceHealthCheckNodePortImmutable(t *testing.T) {
	old := service("lb", corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080})
	old.Spec.Type, old.Spec.ExternalTrafficPolicy, old.Spec.HealthCheckNodePort = corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal, 30001
	old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.0.0.5", []string{"10.0.0.5"}
	if errs := registrytest.CreateSteps(ServiceRules, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	moved := old.DeepCopy()
	moved.Spec.HealthCheckNodePort = 30002
	errs := registrytest.UpdateSteps(ServiceRules, moved, old)
	registrytest.ExpectErrors(t, "moved health check node port", errs, "spec.healthCheckNodePort: FieldValueForbidden")
	registrytest.ExpectMessage(t, errs, "spec.healthCheckNodePort", "field is immutable")

	// Switching to Cluster drops the health check port: allowed.
	cluster := old.DeepCopy()
	cluster.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	registrytest.ExpectErrors(t, "policy to Cluster", registrytest.UpdateSteps(ServiceRules, cluster, old))
	if cluster.Spec.HealthCheckNodePort != 0 {
		t.Errorf("health check node port kept after the policy became Cluster: %d", cluster.Spec.HealthCheckNodePort)
	}
}

// TestServiceLoadBalancerClass: kube's validateLoadBalancerClassField: a qualified name,
// on a LoadBalancer Service only, that does not change while the Service stays one.
func TestServiceLoadBalancerClass(t *testing.T) {
	withClass := func(typ corev1.ServiceType, class string) *corev1.Service {
		svc := service("lb", corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(8080)})
		svc.Spec.Type, svc.Spec.LoadBalancerClass, svc.Spec.ClusterIP, svc.Spec.ClusterIPs = typ, &class, "10.0.0.5", []string{"10.0.0.5"}
		return svc
	}
	errs := registrytest.CreateSteps(ServiceRules, withClass(corev1.ServiceTypeClusterIP, "example.com/lb"))
	registrytest.ExpectErrors(t, "a ClusterIP Service's class", errs, "spec.loadBalancerClass: FieldValueForbidden")
	registrytest.ExpectMessage(t, errs, "spec.loadBalancerClass", "may only be used when `type` is 'LoadBalancer'")
	errs = registrytest.CreateSteps(ServiceRules, withClass(corev1.ServiceTypeLoadBalancer, "Bad Class"))
	registrytest.ExpectMessage(t, errs, "spec.loadBalancerClass", `Invalid value: "Bad Class": name part must consist of alphanumeric characters`)

	old := withClass(corev1.ServiceTypeLoadBalancer, "example.com/lb")
	if errs := registrytest.CreateSteps(ServiceRules, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	changed := old.DeepCopy()
	changed.Spec.LoadBalancerClass = nil
	errs = registrytest.UpdateSteps(ServiceRules, changed, old)
	registrytest.ExpectErrors(t, "class unset", errs, "spec.loadBalancerClass: FieldValueInvalid")
	registrytest.ExpectMessage(t, errs, "spec.loadBalancerClass", "Invalid value: null: may not change once set")
}
