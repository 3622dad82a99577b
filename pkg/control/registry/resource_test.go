package registry

import (
	"time"

	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func claimSpec(requests ...resourcev1.DeviceRequest) resourcev1.ResourceClaimSpec {
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: requests}}
}

func TestResourceClaimRules(t *testing.T) {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default"},
		Spec: claimSpec(resourcev1.DeviceRequest{Name: "req-0", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "dra.example.com"}})}
	expectErrors(t, "claim", createSteps(resourceClaimRules, c))
	if e := c.Spec.Devices.Requests[0].Exactly; e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != 1 {
		t.Errorf("defaults: %+v", e)
	}
	if row := resourceClaimRules.Table.Row(c); row[1] != "pending" {
		t.Errorf("claim row: %v", row)
	}
	bad := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default"}, Spec: claimSpec(
		resourcev1.DeviceRequest{Name: "Not_A_Label", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "x",
			AllocationMode: resourcev1.DeviceAllocationModeAll, Count: 2, Selectors: []resourcev1.DeviceSelector{{}}}},
		resourcev1.DeviceRequest{Name: "neither"},
		resourcev1.DeviceRequest{Name: "both", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "x"},
			FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "a", DeviceClassName: "x"}}},
		resourcev1.DeviceRequest{Name: "neither"},
	)}
	errs := createSteps(resourceClaimRules, bad)
	expectErrors(t, "bad claim", errs, "spec.devices.requests[0].name: FieldValueInvalid", "spec.devices.requests[0].exactly.count: FieldValueInvalid",
		"spec.devices.requests[0].exactly.selectors[0].cel: FieldValueRequired", "spec.devices.requests[1]: FieldValueRequired",
		"spec.devices.requests[2]: FieldValueInvalid", "spec.devices.requests[3]: FieldValueDuplicate", "spec.devices.requests[3]: FieldValueRequired")
	expectMessage(t, errs, "spec.devices.requests[1]", "exactly one of `exactly` or `firstAvailable` is required")
	expectMessage(t, errs, "spec.devices.requests[2]", "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set")
	expectMessage(t, errs, "spec.devices.requests[0].exactly.count", "must not be specified when allocationMode is 'All'")

	changed := c.DeepCopy()
	changed.Spec.Devices.Requests[0].Exactly.DeviceClassName = "other.example.com"
	expectErrors(t, "changed claim spec", updateSteps(resourceClaimRules, changed, c), "spec: FieldValueInvalid")
	relabeled := c.DeepCopy()
	relabeled.Labels = map[string]string{"test.dra.example.com": "test"}
	expectErrors(t, "relabeled claim", updateSteps(resourceClaimRules, relabeled, c))

	allocated := c.DeepCopy()
	allocated.Status.Allocation = &resourcev1.AllocationResult{}
	allocated.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "1"}}
	expectErrors(t, "allocated claim", updateSteps(resourceClaimRules, allocated, c))
	if row := resourceClaimRules.Table.Row(allocated); row[1] != "allocated,reserved" {
		t.Errorf("allocated claim row: %v", row)
	}
	reserved := c.DeepCopy()
	reserved.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p"}}
	expectErrors(t, "reserved, not allocated", updateSteps(resourceClaimRules, reserved, c),
		"status.reservedFor: FieldValueForbidden", "status.reservedFor[0].uid: FieldValueRequired")
	reallocated := allocated.DeepCopy()
	reallocated.Status.Allocation.AllocationTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	expectErrors(t, "reallocated", updateSteps(resourceClaimRules, reallocated, allocated), "status.allocation: FieldValueInvalid")
}

func TestResourceClaimTemplateRules(t *testing.T) {
	tpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: claimSpec(resourcev1.DeviceRequest{Name: "req-0",
			FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "big", DeviceClassName: "big.example.com"}, {Name: "big", DeviceClassName: ""}}})}}
	expectErrors(t, "template", createSteps(resourceClaimTemplateRules, tpl),
		"spec.spec.devices.requests[0].firstAvailable[1]: FieldValueDuplicate", "spec.spec.devices.requests[0].firstAvailable[1].deviceClassName: FieldValueRequired")
	tpl.Spec.Spec.Devices.Requests[0].FirstAvailable = tpl.Spec.Spec.Devices.Requests[0].FirstAvailable[:1]
	expectErrors(t, "template", createSteps(resourceClaimTemplateRules, tpl))
	if s := tpl.Spec.Spec.Devices.Requests[0].FirstAvailable[0]; s.Count != 1 {
		t.Errorf("subrequest defaults: %+v", s)
	}
	changed := tpl.DeepCopy()
	changed.Spec.Spec.Devices.Requests[0].Name = "req-1"
	expectErrors(t, "changed template", updateSteps(resourceClaimTemplateRules, changed, tpl), "spec: FieldValueInvalid")
}

func TestDeviceClassRules(t *testing.T) {
	c := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "false"}}}}}
	expectErrors(t, "class", createSteps(deviceClassRules, c))
	bad := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: resourcev1.DeviceClassSpec{
		Selectors:            []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{}}},
		Config:               []resourcev1.DeviceClassConfiguration{{}},
		ExtendedResourceName: ptr.To("cpu")}}
	expectErrors(t, "bad class", createSteps(deviceClassRules, bad), "spec.selectors[0].cel.expression: FieldValueRequired",
		"spec.config[0].opaque: FieldValueRequired", "spec.extendedResourceName: FieldValueInvalid")
	if !deviceClassRules.Generation {
		t.Error("a DeviceClass counts its generations, as kube's strategy")
	}
}

func TestResourceSliceRules(t *testing.T) {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu"}, Spec: resourcev1.ResourceSliceSpec{
		Driver: "dra.example.com", NodeName: ptr.To("node-1"), Pool: resourcev1.ResourcePool{Name: "cluster", Generation: 1, ResourceSliceCount: 1}}}
	expectErrors(t, "slice", createSteps(resourceSliceRules, s))
	if f := resourceSliceRules.Fields(s); f["spec.nodeName"] != "node-1" || f["spec.driver"] != "dra.example.com" {
		t.Errorf("fields: %v", f)
	}
	if row := resourceSliceRules.Table.Row(s); row[1] != "node-1" || row[2] != "dra.example.com" || row[3] != "cluster" {
		t.Errorf("slice row: %v", row)
	}
	bad := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: resourcev1.ResourceSliceSpec{
		Driver: "Not A Driver", NodeName: ptr.To("node-1"), AllNodes: ptr.To(true),
		Devices: []resourcev1.Device{{Name: "d"}, {Name: "d"}}}}
	errs := createSteps(resourceSliceRules, bad)
	expectErrors(t, "bad slice", errs, "spec.driver: FieldValueInvalid", "spec.pool.name: FieldValueRequired",
		"spec.pool.resourceSliceCount: FieldValueInvalid", "spec: FieldValueInvalid", "spec.devices[1]: FieldValueDuplicate")
	expectMessage(t, errs, "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set")
	if w := resourceSliceRules.Warnings(bad); len(w) != 1 {
		t.Errorf("an uppercase driver name is warned of: %v", w)
	}
	moved := s.DeepCopy()
	moved.Spec.NodeName = ptr.To("node-2")
	moved.Spec.Devices = []resourcev1.Device{{Name: "device-0"}}
	expectErrors(t, "moved slice", updateSteps(resourceSliceRules, moved, s), "spec.nodeName: FieldValueInvalid")
}
