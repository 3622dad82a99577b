package registry

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRuntimeClassRules(t *testing.T) {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}
	expectErrors(t, "runtime class", createSteps(runtimeClassRules, rc))
	if w := runtimeClassRules.Warnings(rc); len(w) != 1 {
		t.Errorf("a RuntimeClass minilet does not act on must be warned of: %v", w)
	}
	if row := runtimeClassRules.Table.Row(rc); row[1] != "runsc" {
		t.Errorf("runtime class row: %v", row)
	}
	bad := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Handler: "Not_A_Label",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}}
	expectErrors(t, "bad runtime class", createSteps(runtimeClassRules, bad), "handler: FieldValueInvalid", "overhead.podFixed[cpu]: FieldValueInvalid")
	changed := rc.DeepCopy()
	changed.Handler = "kata"
	expectErrors(t, "changed handler", updateSteps(runtimeClassRules, changed, rc), "handler: FieldValueInvalid")
}

func TestCSINodeRules(t *testing.T) {
	count := int32(-1)
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "ebs.csi.aws.com", NodeID: "i-1", TopologyKeys: []string{"topology.ebs.csi.aws.com/zone"}},
		{Name: "ebs.csi.aws.com", NodeID: "", Allocatable: &storagev1.VolumeNodeResources{Count: &count}},
	}}}
	expectErrors(t, "csi node", createSteps(csiNodeRules, n), "spec.drivers[1].name: FieldValueDuplicate",
		"spec.drivers[1].nodeID: FieldValueRequired", "spec.drivers[1].allocatable.count: FieldValueInvalid")
	// kube's limit on a node ID is 256 characters, in kube's words.
	long := &storagev1.CSINode{ObjectMeta: n.ObjectMeta, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "a.csi.example.com", NodeID: strings.Repeat("n", 256)}, {Name: "b.csi.example.com", NodeID: strings.Repeat("n", 257)}}}}
	expectErrors(t, "long node IDs", createSteps(csiNodeRules, long), "spec.drivers[1].nodeID: FieldValueInvalid")
	expectMessage(t, createSteps(csiNodeRules, long), "spec.drivers[1].nodeID", "must be 256 characters or less")
	old := &storagev1.CSINode{ObjectMeta: n.ObjectMeta, Spec: storagev1.CSINodeSpec{Drivers: n.Spec.Drivers[:1]}}
	changed := old.DeepCopy()
	changed.Spec.Drivers[0].NodeID = "i-2"
	expectErrors(t, "changed node ID", updateSteps(csiNodeRules, changed, old), "spec.drivers[0].nodeID: FieldValueInvalid")
	if row := csiNodeRules.Table.Row(old); row[1] != int64(1) {
		t.Errorf("csi node row: %v", row)
	}
}
