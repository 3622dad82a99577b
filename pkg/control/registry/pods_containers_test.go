package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestPodAndTemplateContainers: a pod and a pod template are refused alike when they have
// no container, or an init container named as a regular one, each error under its own path.
func TestPodAndTemplateContainers(t *testing.T) {
	clash := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways,
		InitContainers: []corev1.Container{{Name: "app", Image: "busybox:1"}},
		Containers:     []corev1.Container{{Name: "app", Image: "busybox:1"}}}
	empty := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}
	expectErrors(t, "pod with clashing names", validatePod(&corev1.Pod{ObjectMeta: objMeta("p"), Spec: clash}),
		"spec.containers[0].name: FieldValueDuplicate")
	expectErrors(t, "pod without containers", validatePod(&corev1.Pod{ObjectMeta: objMeta("p"), Spec: empty}),
		"spec.containers: FieldValueRequired")
	template := field.NewPath("spec", "template")
	expectErrors(t, "template with clashing names", validatePodTemplate(&corev1.PodTemplateSpec{Spec: clash}, template, corev1.RestartPolicyAlways),
		"spec.template.spec.containers[0].name: FieldValueDuplicate")
	expectErrors(t, "template without containers", validatePodTemplate(&corev1.PodTemplateSpec{Spec: empty}, template, corev1.RestartPolicyAlways),
		"spec.template.spec.containers: FieldValueRequired")
}
