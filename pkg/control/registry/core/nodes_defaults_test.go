package core

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeAllocatableDefaultsToCapacity: kube's SetDefaults_NodeStatus: a node's status
// with a capacity and no allocatable gets the capacity as allocatable (what the scheduler
// fits pods to), so a negative capacity is named twice; an allocatable given stays.
func TestNodeAllocatableDefaultsToCapacity(t *testing.T) {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("10")}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Capacity: capacity}}
	registrytest.ExpectMessages(t, "node", registrytest.CreateSteps(NodeRules, n))
	if !equality.Semantic.DeepEqual(n.Status.Allocatable, capacity) {
		t.Errorf("allocatable %v, want the capacity %v", n.Status.Allocatable, capacity)
	}
	old := n.DeepCopy()
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	registrytest.ExpectMessages(t, "new capacity", registrytest.UpdateSteps(NodeRules, n, old))
	if !equality.Semantic.DeepEqual(n.Status.Allocatable, capacity) {
		t.Errorf("allocatable %v after a new capacity, want it kept: %v", n.Status.Allocatable, capacity)
	}
	bad := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}}
	registrytest.ExpectMessages(t, "negative capacity", registrytest.CreateSteps(NodeRules, bad),
		`status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0`,
		`status.allocatable.cpu: Invalid value: "-1": must be greater than or equal to 0`)
}
