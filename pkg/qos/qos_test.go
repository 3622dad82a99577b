package qos

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func container(req, lim map[corev1.ResourceName]string) corev1.Container {
	c := corev1.Container{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}}
	for n, v := range req {
		c.Resources.Requests[n] = resource.MustParse(v)
	}
	for n, v := range lim {
		c.Resources.Limits[n] = resource.MustParse(v)
	}
	return c
}

func TestClass(t *testing.T) {
	cpu, mem := corev1.ResourceCPU, corev1.ResourceMemory
	both := map[corev1.ResourceName]string{cpu: "500m", mem: "64Mi"}
	for _, tc := range []struct {
		name       string
		containers []corev1.Container
		want       corev1.PodQOSClass
	}{
		{"nothing asked", []corev1.Container{container(nil, nil)}, corev1.PodQOSBestEffort},
		{"requests equal limits", []corev1.Container{container(both, both), container(both, both)}, corev1.PodQOSGuaranteed},
		{"only a request", []corev1.Container{container(map[corev1.ResourceName]string{mem: "1Mi"}, nil)}, corev1.PodQOSBurstable},
		{"limit above request", []corev1.Container{container(map[corev1.ResourceName]string{cpu: "100m", mem: "64Mi"}, both)}, corev1.PodQOSBurstable},
		{"one container without limits", []corev1.Container{container(both, both), container(nil, nil)}, corev1.PodQOSBurstable},
		{"only a memory limit", []corev1.Container{container(map[corev1.ResourceName]string{mem: "64Mi"}, map[corev1.ResourceName]string{mem: "64Mi"})}, corev1.PodQOSBurstable},
		{"ephemeral storage does not count", []corev1.Container{container(map[corev1.ResourceName]string{"ephemeral-storage": "1Gi"}, nil)}, corev1.PodQOSBestEffort},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: tc.containers}}
		if got := Class(pod); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestClassOfPodLevelResources: with pod-level resources (spec.resources, PodLevelResources
// on by default since 1.34) they alone decide the class, as kube's ComputePodQOS.
func TestClassOfPodLevelResources(t *testing.T) {
	cpu, mem := corev1.ResourceCPU, corev1.ResourceMemory
	both := map[corev1.ResourceName]string{cpu: "1", mem: "1Gi"}
	list := func(m map[corev1.ResourceName]string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for n, v := range m {
			l[n] = resource.MustParse(v)
		}
		return l
	}
	for _, tc := range []struct {
		name       string
		pod        corev1.ResourceRequirements
		containers []corev1.Container
		want       corev1.PodQOSClass
	}{
		{"pod requests equal pod limits, containers ask nothing", corev1.ResourceRequirements{Requests: list(both), Limits: list(both)},
			[]corev1.Container{container(nil, nil)}, corev1.PodQOSGuaranteed},
		{"pod limits only cpu", corev1.ResourceRequirements{Requests: list(map[corev1.ResourceName]string{cpu: "1"}), Limits: list(map[corev1.ResourceName]string{cpu: "1"})},
			[]corev1.Container{container(both, both)}, corev1.PodQOSBurstable},
		{"pod requests only", corev1.ResourceRequirements{Requests: list(both)}, []corev1.Container{container(nil, nil)}, corev1.PodQOSBurstable},
		{"empty pod-level resources: the containers' do not count", corev1.ResourceRequirements{},
			[]corev1.Container{container(both, both)}, corev1.PodQOSBestEffort},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Resources: &tc.pod, Containers: tc.containers}}
		if got := Class(pod); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
