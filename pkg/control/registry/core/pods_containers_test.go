package core

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestPodAndTemplateContainers: a pod and a pod template are refused alike when they have
// no container, or an init container named as a regular one (the init container is the
// duplicate, as kube validates regular containers first), each error under its own path.
func TestPodAndTemplateContainers(t *testing.T) {
	clash := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways,
		InitContainers: []corev1.Container{defaulted(corev1.Container{Name: "app", Image: "busybox:1"})},
		Containers:     []corev1.Container{defaulted(corev1.Container{Name: "app", Image: "busybox:1"})}}
	empty := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}
	registrytest.ExpectErrors(t, "pod with clashing names", validatePod(&corev1.Pod{ObjectMeta: registrytest.ObjMeta("p"), Spec: clash}),
		"spec.initContainers[0].name: FieldValueDuplicate")
	registrytest.ExpectErrors(t, "pod without containers", validatePod(&corev1.Pod{ObjectMeta: registrytest.ObjMeta("p"), Spec: empty}),
		"spec.containers: FieldValueRequired")
	template := field.NewPath("spec", "template")
	registrytest.ExpectErrors(t, "template with clashing names", registry.ValidatePodTemplate(&corev1.PodTemplateSpec{Spec: clash}, template, corev1.RestartPolicyAlways),
		"spec.template.spec.initContainers[0].name: FieldValueDuplicate")
	registrytest.ExpectErrors(t, "template without containers", registry.ValidatePodTemplate(&corev1.PodTemplateSpec{Spec: empty}, template, corev1.RestartPolicyAlways),
		"spec.template.spec.containers: FieldValueRequired")
}

// TestContainerResources: requests above limits (kubectl set resources --limits=cpu=100m
// --requests=cpu=200m), negative quantities and an extended resource whose request differs
// from its limit are refused with kube's words (validateResourceRequirements).
func TestContainerResources(t *testing.T) {
	pod := func(r corev1.ResourceRequirements) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: registrytest.ObjMeta("p"), Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{defaulted(corev1.Container{Name: "c", Image: "busybox:1", Resources: r})}}}
	}
	errs := validatePod(pod(corev1.ResourceRequirements{Limits: resourceList("cpu", "100m"), Requests: resourceList("cpu", "200m")}))
	if len(errs) != 1 || errs[0].Error() != `spec.containers[0].resources.requests: Invalid value: "200m": must be less than or equal to cpu limit of 100m` {
		t.Errorf("request above limit: %v", errs)
	}
	errs = validatePod(pod(corev1.ResourceRequirements{Requests: resourceList("memory", "-1")}))
	if len(errs) != 1 || errs[0].Error() != `spec.containers[0].resources.requests[memory]: Invalid value: "-1": must be greater than or equal to 0` {
		t.Errorf("negative request: %v", errs)
	}
	errs = validatePod(pod(corev1.ResourceRequirements{Limits: resourceList("example.com/dongle", "2"), Requests: resourceList("example.com/dongle", "1")}))
	if len(errs) != 1 || errs[0].Error() != `spec.containers[0].resources.requests: Invalid value: "1": must be equal to example.com/dongle limit of 2` {
		t.Errorf("extended resource: %v", errs)
	}
	errs = validatePod(pod(corev1.ResourceRequirements{Requests: resourceList("example.com/dongle", "1")}))
	if len(errs) != 1 || errs[0].Error() != `spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources` {
		t.Errorf("extended resource without limit: %v", errs)
	}
	if errs := validatePod(pod(corev1.ResourceRequirements{Limits: resourceList("cpu", "1", "memory", "1Gi"), Requests: resourceList("cpu", "1", "memory", "512Mi")})); len(errs) != 0 {
		t.Errorf("valid resources refused: %v", errs)
	}
}
