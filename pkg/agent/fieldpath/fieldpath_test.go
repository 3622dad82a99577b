package fieldpath

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValue(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", UID: "u1",
			Labels: map[string]string{"app": "web", "tier": `front "end"`}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{NodeName: "node-1"},
	}
	addrs := Addresses{PodIP: "10.244.1.5", HostIP: "10.200.0.11"}
	for path, want := range map[string]string{
		"metadata.name": "web", "metadata.namespace": "prod", "metadata.uid": "u1", "spec.nodeName": "node-1",
		"status.podIP": "10.244.1.5", "status.hostIP": "10.200.0.11", "metadata.labels['app']": "web",
		"metadata.labels": "app=\"web\"\ntier=\"front \\\"end\\\"\"", "metadata.annotations": `a="b"`,
	} {
		if got, err := Value(pod, path, addrs); err != nil || got != want {
			t.Errorf("Value(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := Value(pod, "spec.nope", addrs); err == nil {
		t.Error("unsupported path accepted")
	}
}

func TestResourceValue(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}}}}}
	node := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	for _, tc := range []struct {
		resource, divisor, want string
	}{
		{"requests.cpu", "", "1"}, {"requests.cpu", "1m", "250"}, {"limits.memory", "1Mi", "128"},
		{"requests.memory", "", "67108864"}, {"limits.cpu", "", "2"},
	} {
		ref := &corev1.ResourceFieldSelector{Resource: tc.resource}
		if tc.divisor != "" {
			ref.Divisor = resource.MustParse(tc.divisor)
		}
		if got, err := ResourceValue(pod, "app", ref, node); err != nil || got != tc.want {
			t.Errorf("%s / %q = %q, %v; want %s", tc.resource, tc.divisor, got, err, tc.want)
		}
	}
}

// TestResourceValuePodLevelLimits: for an environment variable a limit the container
// does not set is the pod's pod-level one before the node's allocatable, as the
// kubelet's defaultPodLimitsForDownwardAPI (PodLevelResources, on by default); a
// downwardAPI volume's file is the node's allocatable still, as the kubelet's CollectData.
func TestResourceValuePodLevelLimits(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
		Containers: []corev1.Container{{Name: "app"}, {Name: "capped", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	node := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	for _, tc := range []struct{ container, resource, divisor, want string }{
		{"app", "limits.cpu", "1m", "500"},      // the pod's
		{"app", "limits.memory", "1Mi", "1024"}, // the node's: the pod limits no memory
		{"capped", "limits.cpu", "1m", "100"},   // the container's own
	} {
		ref := &corev1.ResourceFieldSelector{Resource: tc.resource, Divisor: resource.MustParse(tc.divisor)}
		if got, err := ResourceValue(pod, tc.container, ref, node); err != nil || got != tc.want {
			t.Errorf("%s %s = %q, %v; want %s", tc.container, tc.resource, got, err, tc.want)
		}
	}
	ref := &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}
	if got, err := VolumeResourceValue(pod, ref, node); err != nil || got != "2000" {
		t.Errorf("volume file of app's limits.cpu = %q, %v; want the node's 2000", got, err)
	}
}

// TestResourceValueNoSuchContainer: kube's words (findContainerInPod), what a
// downwardAPI volume's FailedMount event shows.
func TestResourceValueNoSuchContainer(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	ref := &corev1.ResourceFieldSelector{ContainerName: "gone", Resource: "limits.cpu"}
	if _, err := VolumeResourceValue(pod, ref, nil); err == nil || err.Error() != "container gone not found" {
		t.Errorf("error %v, want kube's", err)
	}
}
