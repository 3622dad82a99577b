package core

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	"github.com/minik8s/minik8s/pkg/poddefaults"
)

// podWithPodLevelResources is a running Burstable pod with pod-level resources
// (requests 200m/200Mi, limits 400m/400Mi) over one container asking 100m/100Mi.
func podWithPodLevelResources() *corev1.Pod {
	c := corev1.Container{Name: "c1", Image: "busybox:1", Resources: corev1.ResourceRequirements{
		Requests: resourceList("cpu", "100m", "memory", "100Mi")}}
	pod := &corev1.Pod{ObjectMeta: registrytest.ObjMeta("p"), Spec: corev1.PodSpec{NodeName: "node-1",
		Resources: &corev1.ResourceRequirements{
			Requests: resourceList("cpu", "200m", "memory", "200Mi"),
			Limits:   resourceList("cpu", "400m", "memory", "400Mi")},
		Containers: []corev1.Container{c}}}
	poddefaults.Pod(pod)
	pod.Status = corev1.PodStatus{QOSClass: corev1.PodQOSBurstable, ContainerStatuses: []corev1.ContainerStatus{{Name: "c1",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, Resources: c.Resources.DeepCopy()}}}
	return pod
}

// TestPodLevelResourcesResize: pods/resize takes and checks pod-level resources as
// kube-apiserver 1.36 with InPlacePodLevelResourcesVerticalScaling (beta, on):
// dropNonResizeUpdates keeps the request's spec.resources, and ValidatePodResize with
// validatePodLevelResourcesResize (pkg/apis/core/validation/validation.go) refuses
// removals, other resources than cpu and memory, a new QoS class and pod-level requests
// below the containers'.
func TestPodLevelResourcesResize(t *testing.T) {
	cases := []struct {
		name       string
		change     func(p *corev1.Pod)
		want       []string
		noneBefore bool // the stored pod has no pod-level resources
	}{
		{"cpu and memory grow", func(p *corev1.Pod) {
			p.Spec.Resources.Requests = resourceList("cpu", "300m", "memory", "300Mi")
			p.Spec.Resources.Limits = resourceList("cpu", "500m", "memory", "500Mi")
		}, nil, false},
		{"pod-level and container resources together", func(p *corev1.Pod) {
			p.Spec.Resources.Requests = resourceList("cpu", "300m", "memory", "300Mi")
			p.Spec.Containers[0].Resources.Requests = resourceList("cpu", "250m", "memory", "250Mi")
		}, nil, false},
		{"memory limit lowered", func(p *corev1.Pod) {
			p.Spec.Resources.Limits = resourceList("cpu", "400m", "memory", "300Mi")
		}, nil, false},
		{"added to a pod without them, QoS class kept", func(*corev1.Pod) {}, nil, true},
		{"removed", func(p *corev1.Pod) { p.Spec.Resources = nil },
			[]string{"spec.resources: Forbidden: pod-level resources cannot be removed"}, false},
		{"a limit removed", func(p *corev1.Pod) { delete(p.Spec.Resources.Limits, corev1.ResourceCPU) },
			[]string{"spec.resources.limits: Forbidden: pod-level resource limits cannot be removed"}, false},
		{"a request removed", func(p *corev1.Pod) { delete(p.Spec.Resources.Requests, corev1.ResourceMemory) },
			[]string{"spec.resources.requests: Forbidden: pod-level resource requests cannot be removed"}, false},
		{"hugepages added", func(p *corev1.Pod) {
			p.Spec.Resources.Requests["hugepages-2Mi"] = resourceList("x", "2Mi")["x"]
			p.Spec.Resources.Limits["hugepages-2Mi"] = resourceList("x", "2Mi")["x"]
		}, []string{"spec: Forbidden: only cpu and memory resources are mutable at pod-level"}, false},
		{"QoS class changes", func(p *corev1.Pod) {
			p.Spec.Resources.Requests = p.Spec.Resources.Limits.DeepCopy()
		}, []string{"spec: Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"}, false},
		{"below the containers' requests", func(p *corev1.Pod) {
			p.Spec.Resources.Requests = resourceList("cpu", "50m", "memory", "200Mi")
		}, []string{"spec.resources.requests[cpu]: Invalid value: \"50m\": must be greater than or equal to aggregate container requests of 100m"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := podWithPodLevelResources()
			if tc.noneBefore {
				old.Spec.Resources = nil
			}
			sent := podWithPodLevelResources()
			sent.Spec.Containers[0].Image = "nginx:1" // not a resize: dropped, not refused
			tc.change(sent)
			got := dropNonResizeUpdates(sent.DeepCopy(), old.DeepCopy())
			if !equality.Semantic.DeepEqual(got.Spec.Resources, sent.Spec.Resources) {
				t.Errorf("spec.resources %+v after dropNonResizeUpdates, sent %+v", got.Spec.Resources, sent.Spec.Resources)
			}
			if got.Spec.Containers[0].Image != "busybox:1" {
				t.Errorf("image %q after dropNonResizeUpdates", got.Spec.Containers[0].Image)
			}
			if errs := registrytest.Messages(validatePodResize(got, old)); !equalLines(errs, tc.want) {
				t.Errorf("errors\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestResizeOnlyCPUMemory: a resize touching another resource is refused per container,
// as kube's ValidatePodResize words it, beside the resize's other errors: at spec for a
// container, at the init container for a sidecar.
func TestResizeOnlyCPUMemory(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	old := &corev1.Pod{ObjectMeta: registrytest.ObjMeta("p"), Spec: corev1.PodSpec{NodeName: "node-1",
		InitContainers: []corev1.Container{{Name: "sidecar", Image: "busybox:1", RestartPolicy: &always,
			Resources: corev1.ResourceRequirements{Requests: resourceList("cpu", "100m")}}},
		Containers: []corev1.Container{{Name: "c1", Image: "busybox:1",
			Resources: corev1.ResourceRequirements{Requests: resourceList("cpu", "100m")}}}}}
	poddefaults.Pod(old)
	storage := resourceList("x", "1Gi")["x"]
	cases := []struct {
		name   string
		change func(p *corev1.Pod)
		want   []string
	}{
		{"sidecar", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Resources.Requests[corev1.ResourceEphemeralStorage] = storage
		}, []string{"spec.initContainers[0]: Forbidden: only cpu and memory resources for init or sidecar containers are mutable"}},
		{"container, with a removed request", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceEphemeralStorage: storage}
		}, []string{"spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed",
			"spec: Forbidden: only cpu and memory resources are mutable"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := old.DeepCopy()
			tc.change(p)
			if errs := registrytest.Messages(validatePodResize(p, old)); !equalLines(errs, tc.want) {
				t.Errorf("errors\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestNonSidecarInitContainerResize: with InPlacePodVerticalScalingInitContainers (beta,
// on in 1.36) kube's ValidatePodResize takes a non-sidecar init container's CPU and memory
// as a sidecar's, whether the pod is still initializing or past its init containers, and
// refuses other resources, removals, and a resize of one with a RestartContainer policy.
func TestNonSidecarInitContainerResize(t *testing.T) {
	old := &corev1.Pod{ObjectMeta: registrytest.ObjMeta("p"), Spec: corev1.PodSpec{NodeName: "node-1",
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1",
			Resources: corev1.ResourceRequirements{Requests: resourceList("cpu", "100m", "memory", "64Mi")}}},
		Containers: []corev1.Container{{Name: "c1", Image: "busybox:1",
			Resources: corev1.ResourceRequirements{Requests: resourceList("cpu", "100m")}}}}}
	poddefaults.Pod(old)
	pastInit := old.DeepCopy()
	pastInit.Status = corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c1", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			Resources: old.Spec.Containers[0].Resources.DeepCopy()}}}
	restartContainer := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
	cases := []struct {
		name   string
		old    *corev1.Pod
		change func(c *corev1.Container)
		want   []string
	}{
		{"cpu and memory while initializing", old, func(c *corev1.Container) {
			c.Resources.Requests = resourceList("cpu", "200m", "memory", "128Mi")
			c.Resources.Limits = resourceList("memory", "256Mi")
		}, nil},
		{"cpu past the init containers", pastInit, func(c *corev1.Container) {
			c.Resources.Requests = resourceList("cpu", "50m", "memory", "64Mi")
		}, nil},
		{"ephemeral storage", old, func(c *corev1.Container) {
			c.Resources.Requests = resourceList("cpu", "100m", "memory", "64Mi", "ephemeral-storage", "1Gi")
		}, []string{"spec.initContainers[0]: Forbidden: only cpu and memory resources for init or sidecar containers are mutable"}},
		{"a request removed", old, func(c *corev1.Container) {
			c.Resources.Requests = resourceList("cpu", "100m")
		}, []string{"spec.initContainers[0].resources.requests: Forbidden: resource requests cannot be removed"}},
		{"with a RestartContainer policy", old, func(c *corev1.Container) {
			c.Resources.Requests = resourceList("cpu", "200m", "memory", "64Mi")
			c.ResizePolicy = restartContainer
		}, []string{
			`spec.initContainers[0].resizePolicy[0].restartPolicy: Invalid value: "RestartContainer": must not be set to 'RestartContainer' for non-sidecar initContainers`,
			"spec.initContainers[0]: Forbidden: only cpu and memory resources for init or sidecar containers are mutable",
			"spec.initContainers[0]: Forbidden: non-sidecar init containers with a resize policy of RestartContainer cannot be resized"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.old.DeepCopy()
			tc.change(&p.Spec.InitContainers[0])
			if errs := registrytest.Messages(validatePodResize(p, tc.old)); !equalLines(errs, tc.want) {
				t.Errorf("errors\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
