package poddefaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPodDefaults(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "busybox",
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		},
		Ports: []corev1.ContainerPort{{ContainerPort: 80}},
	}}}}
	Pod(pod)
	c := pod.Spec.Containers[0]
	if c.Resources.Requests.Cpu().String() != "100m" || c.Resources.Requests.Memory().String() != "64Mi" {
		t.Errorf("requests %v: a given request stays, a missing one is the limit", c.Resources.Requests)
	}
	if c.ImagePullPolicy != corev1.PullAlways || c.Ports[0].Protocol != corev1.ProtocolTCP || pod.Spec.RestartPolicy != corev1.RestartPolicyAlways ||
		*pod.Spec.TerminationGracePeriodSeconds != TerminationGracePeriod {
		t.Errorf("defaults: %+v", pod.Spec)
	}
}
