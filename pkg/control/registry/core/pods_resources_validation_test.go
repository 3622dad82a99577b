package core

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/apps"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resourceList is a ResourceList of name, quantity pairs.
func resourceList(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

// TestPodResourceNamesValidation: the resource names and quantities of a pod's containers,
// overhead and pod-level resources are kube's validateResourceRequirements with
// validateContainerResourceName and validatePodResourceName
// (pkg/apis/core/validation/validation.go, v1.36).
func TestPodResourceNamesValidation(t *testing.T) {
	// Defaulting copies a container's limits to its missing requests, as kube's.
	limits := func(l corev1.ResourceList) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) { s.Containers[0].Resources.Limits = l }
	}
	cases := []struct {
		name string
		edit func(*corev1.PodSpec)
		want []string
	}{
		{"unknown name without a domain", limits(resourceList("foo", "1")), []string{
			`spec.containers[0].resources.limits[foo]: Invalid value: "foo": must be a standard resource type or fully qualified`,
			`spec.containers[0].resources.limits[foo]: Invalid value: "foo": must be a standard resource for containers`,
			`spec.containers[0].resources.requests[foo]: Invalid value: "foo": must be a standard resource type or fully qualified`,
			`spec.containers[0].resources.requests[foo]: Invalid value: "foo": must be a standard resource for containers`}},
		{"a quota name", limits(resourceList("pods", "1")), []string{
			`spec.containers[0].resources.limits[pods]: Invalid value: "pods": must be a standard resource for containers`,
			`spec.containers[0].resources.requests[pods]: Invalid value: "pods": must be a standard resource for containers`}},
		{"a name not qualified", limits(resourceList("example.com/a b", "1")), []string{
			`spec.containers[0].resources.limits[example.com/a b]: Invalid value: "example.com/a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`spec.containers[0].resources.limits[example.com/a b]: Invalid value: "example.com/a b": doesn't follow extended resource name standard`,
			`spec.containers[0].resources.requests[example.com/a b]: Invalid value: "example.com/a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`spec.containers[0].resources.requests[example.com/a b]: Invalid value: "example.com/a b": doesn't follow extended resource name standard`}},
		{"half a GPU", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "i", Image: "busybox", Resources: corev1.ResourceRequirements{
				Limits: resourceList("example.com/gpu", "500m"), Requests: resourceList("example.com/gpu", "500m")}}}
		}, []string{
			`spec.initContainers[0].resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer`,
			`spec.initContainers[0].resources.requests[example.com/gpu]: Invalid value: "500m": must be an integer`}},
		{"hugepages alone and not whole pages", limits(resourceList("hugepages-2Mi", "3Mi")), []string{
			`spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi`,
			`spec.containers[0].resources.requests[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi`,
			`spec.containers[0].resources: Forbidden: HugePages require cpu or memory`}},
		{"overhead of a quota name", func(s *corev1.PodSpec) { s.Overhead = resourceList("services", "1") }, []string{
			`spec.overhead.limits[services]: Invalid value: "services": must be a standard resource for containers`}},
		{"pod-level resources", func(s *corev1.PodSpec) {
			s.Resources = &corev1.ResourceRequirements{Limits: resourceList("ephemeral-storage", "1Gi", "foo", "1"),
				Requests: resourceList("cpu", "-1")}
		}, []string{
			`spec.resources.limits[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", "hugepages-", "memory"`,
			`spec.resources.limits[foo]: Invalid value: "foo": must be a standard resource type or fully qualified`,
			`spec.resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`}},
		{"pod-level resources below the containers'", func(s *corev1.PodSpec) {
			s.Containers[0].Resources = corev1.ResourceRequirements{Limits: resourceList("memory", "2Gi", "hugepages-2Mi", "4Mi"),
				Requests: resourceList("cpu", "2", "hugepages-2Mi", "4Mi")}
			s.Resources = &corev1.ResourceRequirements{Limits: resourceList("cpu", "4", "memory", "1Gi", "hugepages-2Mi", "2Mi"),
				Requests: resourceList("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "2Mi")}
		}, []string{
			`spec.resources.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container requests of 2`,
			`spec.resources.requests[hugepages-2Mi]: Invalid value: "2Mi": must be greater than or equal to aggregate container requests of 4Mi`,
			`spec.resources.requests[memory]: Invalid value: "1Gi": must be greater than or equal to aggregate container requests of 2Gi`,
			`spec.resources.limits[hugepages-2Mi]: Invalid value: "2Mi": must be greater than or equal to aggregate container limits of 4Mi`,
			`spec.resources.containers[0][hugepages-2Mi].limits: Invalid value: "4Mi": must be less than or equal to pod limits of 2Mi`,
			`spec.resources.containers[0][memory].limits: Invalid value: "2Gi": must be less than or equal to pod limits of 1Gi`}},
	}
	for _, c := range cases {
		if got := podCreateErrors(metav1.ObjectMeta{Name: "p", Namespace: "default"}, c.edit); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}

	valid := func(s *corev1.PodSpec) {
		s.Containers[0].Resources = corev1.ResourceRequirements{
			Limits:   resourceList("memory", "1Gi", "hugepages-2Mi", "4Mi", "example.com/gpu", "1", "kubernetes.io/x", "1"),
			Requests: resourceList("cpu", "100m", "hugepages-2Mi", "4Mi", "example.com/gpu", "1")}
		s.Overhead = resourceList("cpu", "250m")
		s.Resources = &corev1.ResourceRequirements{Limits: resourceList("cpu", "1", "memory", "2Gi", "hugepages-2Mi", "8Mi")}
	}
	if got := podCreateErrors(metav1.ObjectMeta{Name: "p", Namespace: "default"}, valid); len(got) != 0 {
		t.Errorf("valid resources refused: %q", got)
	}
}

// TestPodTemplateResourceNamesValidation: a workload's template meets the same checks.
func TestPodTemplateResourceNamesValidation(t *testing.T) {
	d := registrytest.Deployment(map[string]string{"app": "web"})
	d.Spec.Template.Spec.Containers[0].Resources.Requests = resourceList("gpu", "1")
	want := []string{
		`spec.template.spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified`,
		`spec.template.spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource for containers`}
	if got := registrytest.Messages(registrytest.CreateSteps(apps.DeploymentRules, d)); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestPodLevelResourcesDefaulted: a pod created with pod-level limits only is stored as
// kube-apiserver stores it: requests defaulted (from the containers' or the limits) and its
// QoS class from the pod-level resources (kube's SetDefaults_Pod and ComputePodQOS).
func TestPodLevelResourcesDefaulted(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{
		Resources:  &corev1.ResourceRequirements{Limits: resourceList("cpu", "1", "memory", "1Gi")},
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	PodRules.PrepareCreate(pod)
	if got := pod.Spec.Resources.Requests; !got.Cpu().Equal(resource.MustParse("1")) || !got.Memory().Equal(resource.MustParse("1Gi")) {
		t.Errorf("pod-level requests %v, want the limits", got)
	}
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("qosClass %s, want Guaranteed", pod.Status.QOSClass)
	}
}
