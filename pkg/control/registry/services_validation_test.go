package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The checks of Kubernetes v1.36's ValidateService that users meet on kubectl create/apply.
func TestServiceValidationAsKubernetes(t *testing.T) {
	// Two ports with the same number and protocol: a duplicate (the same number over UDP is not).
	svc := service("dup", corev1.ServicePort{Name: "a", Port: 80}, corev1.ServicePort{Name: "b", Port: 80}, corev1.ServicePort{Name: "c", Port: 80, Protocol: corev1.ProtocolUDP})
	errs := createSteps(serviceRules, svc)
	expectErrors(t, "duplicate port", errs, "spec.ports[1]: FieldValueDuplicate")

	// RelaxedServiceNameValidation (beta, on in v1.36): a DNS label, so it may start with a digit.
	expectErrors(t, "name starting with a digit", createSteps(serviceRules, service("1web", corev1.ServicePort{Port: 80})))
	expectErrors(t, "name with a dot", createSteps(serviceRules, service("web.a", corev1.ServicePort{Port: 80})), "metadata.name: FieldValueInvalid")

	// Fields of externally-accessible Services on a ClusterIP one: Invalid, as Kubernetes.
	svc = service("local", corev1.ServicePort{Port: 80})
	svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = corev1.ServiceExternalTrafficPolicyLocal, 30001
	errs = createSteps(serviceRules, svc)
	expectErrors(t, "traffic policy fields on ClusterIP", errs, "spec.externalTrafficPolicy: FieldValueInvalid", "spec.healthCheckNodePort: FieldValueInvalid")
	expectMessage(t, errs, "spec.externalTrafficPolicy", "may only be set for externally-accessible services")

	// A ClusterIP Service with external IPs is externally accessible: its policy defaults to Cluster.
	svc = service("ext-ips", corev1.ServicePort{Port: 80})
	svc.Spec.ExternalIPs = []string{"192.0.2.10"}
	expectErrors(t, "external IPs", createSteps(serviceRules, svc))
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Errorf("externalTrafficPolicy of a ClusterIP Service with external IPs = %q, want Cluster", svc.Spec.ExternalTrafficPolicy)
	}

	// trafficDistribution: one of the three values (PreferSameTrafficDistribution is GA).
	for _, v := range []string{corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferSameNode} {
		svc = service("td", corev1.ServicePort{Port: 80})
		svc.Spec.TrafficDistribution = &v
		expectErrors(t, "trafficDistribution "+v, createSteps(serviceRules, svc))
	}
	bogus := "Nearby"
	svc.Spec.TrafficDistribution = &bogus
	expectErrors(t, "unknown trafficDistribution", createSteps(serviceRules, svc), "spec.trafficDistribution: FieldValueNotSupported")
}

func TestServiceHealthCheckNodePortImmutable(t *testing.T) {
	old := service("lb", corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080})
	old.Spec.Type, old.Spec.ExternalTrafficPolicy, old.Spec.HealthCheckNodePort = corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal, 30001
	old.Spec.ClusterIP = "10.0.0.5"
	if errs := createSteps(serviceRules, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	moved := old.DeepCopy()
	moved.Spec.HealthCheckNodePort = 30002
	errs := updateSteps(serviceRules, moved, old)
	expectErrors(t, "moved health check node port", errs, "spec.healthCheckNodePort: FieldValueForbidden")
	expectMessage(t, errs, "spec.healthCheckNodePort", "field is immutable")

	// Switching to Cluster drops the health check port: allowed.
	cluster := old.DeepCopy()
	cluster.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	expectErrors(t, "policy to Cluster", updateSteps(serviceRules, cluster, old))
	if cluster.Spec.HealthCheckNodePort != 0 {
		t.Errorf("health check node port kept after the policy became Cluster: %d", cluster.Spec.HealthCheckNodePort)
	}
}
