package resourcefit

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestAdmission: a pod is refused with the kubelet's reason and words for the first
// resource the node has not enough left of, counting the pods admitted before it.
func TestAdmission(t *testing.T) {
	pod := func(uid string, requests ...string) *corev1.Pod {
		rl := corev1.ResourceList{}
		for i := 0; i < len(requests); i += 2 {
			rl[corev1.ResourceName(requests[i])] = resource.MustParse(requests[i+1])
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl}}}}}
	}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		corev1.ResourcePods: resource.MustParse("3"), "example.com/gpu": resource.MustParse("1")}
	others := []*corev1.Pod{pod("big", "cpu", "1500m", "memory", "512Mi"), pod("gpu", "example.com/gpu", "1")}
	a := Admission{Allocatable: func() corev1.ResourceList { return allocatable }, Others: func() []*corev1.Pod { return others }}
	for _, tc := range []struct {
		pod         *corev1.Pod
		reason, msg string
	}{
		{pod("fits", "cpu", "500m", "memory", "512Mi"), "", ""},
		{pod("nothing"), "", ""},
		{pod("cpu", "cpu", "600m"), "OutOfcpu", "Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000"},
		{pod("memory", "cpu", "100m", "memory", "513Mi"), "OutOfmemory", "Node didn't have enough resource: memory, requested: 537919488, used: 536870912, capacity: 1073741824"},
		{pod("gpu2", "example.com/gpu", "1"), "OutOfexample.com/gpu", "Node didn't have enough resource: example.com/gpu, requested: 1, used: 1, capacity: 1"},
		{pod("unknown", "example.com/fpga", "4"), "", ""}, // not the node's to count
		{others[0], "", ""}, // itself
	} {
		ok, reason, msg := a.Admit(tc.pod)
		if ok != (tc.reason == "") || reason != tc.reason || msg != tc.msg {
			t.Errorf("pod %s: admitted %v (%q: %q), want reason %q: %q", tc.pod.UID, ok, reason, msg, tc.reason, tc.msg)
		}
	}
	others = append(others, pod("third"))
	if ok, reason, msg := a.Admit(pod("fourth")); ok || reason != "OutOfpods" ||
		msg != "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3" {
		t.Errorf("a fourth pod on a node of three: admitted %v (%q: %q)", ok, reason, msg)
	}
}

// TestAdmissionOfResourcesTheNodeLacks: only an extended resource the node does not
// list is left unchecked (the kubelet's removeMissingExtendedResources); huge pages it lacks
// (a native resource) count as a capacity of 0, as the kubelet's fit check.
func TestAdmissionOfResourcesTheNodeLacks(t *testing.T) {
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		corev1.ResourcePods: resource.MustParse("10")}
	a := Admission{Allocatable: func() corev1.ResourceList { return allocatable }, Others: func() []*corev1.Pod { return nil }}
	for _, tc := range []struct {
		name        corev1.ResourceName
		reason, msg string
	}{
		{"hugepages-2Mi", "OutOfhugepages-2Mi", "Node didn't have enough resource: hugepages-2Mi, requested: 4194304, used: 0, capacity: 0"},
		{"example.com/fpga", "", ""},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Mi"), tc.name: resource.MustParse("4Mi")}}}}}}
		ok, reason, msg := a.Admit(pod)
		if ok != (tc.reason == "") || reason != tc.reason || msg != tc.msg {
			t.Errorf("%s on a node without it: admitted %v (%q: %q), want reason %q: %q", tc.name, ok, reason, msg, tc.reason, tc.msg)
		}
	}
}
