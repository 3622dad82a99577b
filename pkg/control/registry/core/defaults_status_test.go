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

// TestResourceListsRoundedUpToMilli: the resource lists of nodes, quotas, limit ranges,
// volumes and claims are rounded up to the milli scale as kube's SetDefaults_ResourceList
// rounds them (100u is 1m).
func TestResourceListsRoundedUpToMilli(t *testing.T) {
	tiny := func() corev1.ResourceList { return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100u")} }
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Capacity: tiny()}}
	quota := &corev1.ResourceQuota{ObjectMeta: registrytest.ObjMeta("q"), Spec: corev1.ResourceQuotaSpec{Hard: tiny()},
		Status: corev1.ResourceQuotaStatus{Hard: tiny(), Used: tiny()}}
	limits := &corev1.LimitRange{ObjectMeta: registrytest.ObjMeta("l"), Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Max: tiny(), Min: tiny(), MaxLimitRequestRatio: tiny()}}}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{Capacity: tiny()}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: registrytest.ObjMeta("c"), Spec: corev1.PersistentVolumeClaimSpec{
		Resources: corev1.VolumeResourceRequirements{Requests: tiny(), Limits: tiny()}}, Status: corev1.PersistentVolumeClaimStatus{Capacity: tiny()}}
	NodeRules.Default(node)
	ResourceQuotaRules.Default(quota)
	LimitRangeRules.Default(limits)
	PersistentVolumeRules.Default(pv)
	PersistentVolumeClaimRules.Default(pvc)
	item := limits.Spec.Limits[0]
	for what, l := range map[string]corev1.ResourceList{
		"node capacity": node.Status.Capacity, "node allocatable": node.Status.Allocatable,
		"quota spec": quota.Spec.Hard, "quota hard": quota.Status.Hard, "quota used": quota.Status.Used,
		"limit max": item.Max, "limit min": item.Min, "limit ratio": item.MaxLimitRequestRatio, "limit default": item.Default, "limit default request": item.DefaultRequest,
		"volume": pv.Spec.Capacity, "claim requests": pvc.Spec.Resources.Requests, "claim limits": pvc.Spec.Resources.Limits, "claim status": pvc.Status.Capacity,
	} {
		if got := l.Cpu().String(); got != "1m" {
			t.Errorf("%s: cpu %s, want 1m", what, got)
		}
	}
}

// TestNamespaceStatusPhaseAsKube: a status write may not set a phase other than Active
// on a namespace not being deleted, nor Active (or no phase, which defaults to it) on one
// being deleted, in kube-apiserver v1.36.3's words.
func TestNamespaceStatusPhaseAsKube(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Status: corev1.NamespaceStatus{Phase: "Bogus"}}
	registrytest.ExpectMessages(t, "bogus phase", statusSteps(NamespaceRules, ns, ns.DeepCopy()),
		"status.Phase: Invalid value: \"Bogus\": may only be 'Active' if `deletionTimestamp` is empty")
	ns.Status.Phase = corev1.NamespaceActive
	registrytest.ExpectMessages(t, "active", statusSteps(NamespaceRules, ns, ns.DeepCopy()))

	now := metav1.Now()
	deleted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	for _, phase := range []corev1.NamespacePhase{corev1.NamespaceActive, ""} {
		ns := deleted.DeepCopy()
		ns.Status.Phase = phase
		registrytest.ExpectMessages(t, "deleted, phase "+string(phase), statusSteps(NamespaceRules, ns, deleted),
			"status.Phase: Invalid value: \"Active\": may only be 'Terminating' if `deletionTimestamp` is not empty")
	}
	registrytest.ExpectMessages(t, "deleted, terminating", statusSteps(NamespaceRules, deleted.DeepCopy(), deleted))
}
