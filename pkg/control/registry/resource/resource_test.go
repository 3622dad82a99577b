package resource

import (
	"time"

	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
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
	registrytest.ExpectErrors(t, "claim", registrytest.CreateSteps(ResourceClaimRules, c))
	if e := c.Spec.Devices.Requests[0].Exactly; e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != 1 {
		t.Errorf("defaults: %+v", e)
	}
	if row := ResourceClaimRules.Table.Row(c); row[1] != "pending" {
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
	errs := registrytest.CreateSteps(ResourceClaimRules, bad)
	registrytest.ExpectErrors(t, "bad claim", errs, "spec.devices.requests[0].name: FieldValueInvalid", "spec.devices.requests[0].exactly.count: FieldValueInvalid",
		"spec.devices.requests[0].exactly.selectors[0].cel: FieldValueRequired", "spec.devices.requests[1]: FieldValueRequired",
		"spec.devices.requests[2]: FieldValueInvalid", "spec.devices.requests[3]: FieldValueDuplicate", "spec.devices.requests[3]: FieldValueRequired")
	registrytest.ExpectMessage(t, errs, "spec.devices.requests[1]", "exactly one of `exactly` or `firstAvailable` is required")
	registrytest.ExpectMessage(t, errs, "spec.devices.requests[2]", "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set")
	registrytest.ExpectMessage(t, errs, "spec.devices.requests[0].exactly.count", "must not be specified when allocationMode is 'All'")

	changed := c.DeepCopy()
	changed.Spec.Devices.Requests[0].Exactly.DeviceClassName = "other.example.com"
	registrytest.ExpectErrors(t, "changed claim spec", registrytest.UpdateSteps(ResourceClaimRules, changed, c), "spec: FieldValueInvalid")
	relabeled := c.DeepCopy()
	relabeled.Labels = map[string]string{"test.dra.example.com": "test"}
	registrytest.ExpectErrors(t, "relabeled claim", registrytest.UpdateSteps(ResourceClaimRules, relabeled, c))

	allocated := c.DeepCopy()
	allocated.Status.Allocation = &resourcev1.AllocationResult{}
	allocated.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "1"}}
	registrytest.ExpectErrors(t, "allocated claim", registrytest.UpdateSteps(ResourceClaimRules, allocated, c))
	if row := ResourceClaimRules.Table.Row(allocated); row[1] != "allocated,reserved" {
		t.Errorf("allocated claim row: %v", row)
	}
	reserved := c.DeepCopy()
	reserved.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p"}}
	registrytest.ExpectErrors(t, "reserved, not allocated", registrytest.UpdateSteps(ResourceClaimRules, reserved, c),
		"status.reservedFor: FieldValueForbidden", "status.reservedFor[0].uid: FieldValueRequired")
	reallocated := allocated.DeepCopy()
	reallocated.Status.Allocation.AllocationTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	registrytest.ExpectErrors(t, "reallocated", registrytest.UpdateSteps(ResourceClaimRules, reallocated, allocated), "status.allocation: FieldValueInvalid")
}

func TestResourceClaimTemplateRules(t *testing.T) {
	tpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: claimSpec(resourcev1.DeviceRequest{Name: "req-0",
			FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "big", DeviceClassName: "big.example.com"}, {Name: "big", DeviceClassName: ""}}})}}
	registrytest.ExpectErrors(t, "template", registrytest.CreateSteps(ResourceClaimTemplateRules, tpl),
		"spec.spec.devices.requests[0].firstAvailable[1]: FieldValueDuplicate", "spec.spec.devices.requests[0].firstAvailable[1].deviceClassName: FieldValueRequired")
	tpl.Spec.Spec.Devices.Requests[0].FirstAvailable = tpl.Spec.Spec.Devices.Requests[0].FirstAvailable[:1]
	registrytest.ExpectErrors(t, "template", registrytest.CreateSteps(ResourceClaimTemplateRules, tpl))
	if s := tpl.Spec.Spec.Devices.Requests[0].FirstAvailable[0]; s.Count != 1 {
		t.Errorf("subrequest defaults: %+v", s)
	}
	changed := tpl.DeepCopy()
	changed.Spec.Spec.Devices.Requests[0].Name = "req-1"
	registrytest.ExpectErrors(t, "changed template", registrytest.UpdateSteps(ResourceClaimTemplateRules, changed, tpl), "spec: FieldValueInvalid")
}

func TestDeviceClassRules(t *testing.T) {
	c := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "false"}}}}}
	registrytest.ExpectErrors(t, "class", registrytest.CreateSteps(DeviceClassRules, c))
	bad := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: resourcev1.DeviceClassSpec{
		Selectors:            []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{}}},
		Config:               []resourcev1.DeviceClassConfiguration{{}},
		ExtendedResourceName: ptr.To("cpu")}}
	registrytest.ExpectErrors(t, "bad class", registrytest.CreateSteps(DeviceClassRules, bad), "spec.selectors[0].cel.expression: FieldValueRequired",
		"spec.config[0].opaque: FieldValueRequired", "spec.extendedResourceName: FieldValueInvalid")
	if !DeviceClassRules.Generation {
		t.Error("a DeviceClass counts its generations, as kube's strategy")
	}
}

func TestResourceSliceRules(t *testing.T) {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu"}, Spec: resourcev1.ResourceSliceSpec{
		Driver: "dra.example.com", NodeName: ptr.To("node-1"), Pool: resourcev1.ResourcePool{Name: "cluster", Generation: 1, ResourceSliceCount: 1}}}
	registrytest.ExpectErrors(t, "slice", registrytest.CreateSteps(ResourceSliceRules, s))
	if f := ResourceSliceRules.Fields(s); f["spec.nodeName"] != "node-1" || f["spec.driver"] != "dra.example.com" {
		t.Errorf("fields: %v", f)
	}
	if row := ResourceSliceRules.Table.Row(s); row[1] != "node-1" || row[2] != "dra.example.com" || row[3] != "cluster" {
		t.Errorf("slice row: %v", row)
	}
	bad := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: resourcev1.ResourceSliceSpec{
		Driver: "Not A Driver", NodeName: ptr.To("node-1"), AllNodes: ptr.To(true),
		Devices: []resourcev1.Device{{Name: "d"}, {Name: "d"}}}}
	errs := registrytest.CreateSteps(ResourceSliceRules, bad)
	registrytest.ExpectErrors(t, "bad slice", errs, "spec.driver: FieldValueInvalid", "spec.pool.name: FieldValueRequired",
		"spec.pool.resourceSliceCount: FieldValueInvalid", "spec: FieldValueInvalid", "spec.devices[1]: FieldValueDuplicate")
	registrytest.ExpectMessage(t, errs, "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set")
	if w := ResourceSliceRules.Warnings(bad, nil); len(w) != 1 {
		t.Errorf("an uppercase driver name is warned of: %v", w)
	}
	moved := s.DeepCopy()
	moved.Spec.NodeName = ptr.To("node-2")
	moved.Spec.Devices = []resourcev1.Device{{Name: "device-0"}}
	registrytest.ExpectErrors(t, "moved slice", registrytest.UpdateSteps(ResourceSliceRules, moved, s), "spec.nodeName: FieldValueInvalid")
}
