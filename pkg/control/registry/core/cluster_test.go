package core

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestVolumeRules(t *testing.T) {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}},
	}}
	if errs := registrytest.CreateSteps(PersistentVolumeRules, pv); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if pv.Status.Phase != corev1.VolumePending || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("pv not defaulted: %+v", pv)
	}
	if row := PersistentVolumeRules.Table.Row(pv); row[1] != "1Gi" || row[2] != "RWO,ROX" || row[4] != "Pending" {
		t.Errorf("pv row: %v", row)
	}
	pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}
	pv.Spec.AccessModes = nil
	registrytest.ExpectErrors(t, "two sources, no modes", PersistentVolumeRules.Validate(pv), "spec.nfs: FieldValueForbidden", "spec.accessModes: FieldValueRequired")

	// Wrong everywhere: kube-apiserver v1.36.3's errors, in its order.
	bad := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv2"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("-1Gi")},
		AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, "Bogus"},
		PersistentVolumeReclaimPolicy: "Maybe",
		NodeAffinity:                  &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{}},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "relative/../x", Type: ptr.To[corev1.HostPathType]("Bogus")},
			Local: &corev1.LocalVolumeSource{Path: "/l"}},
	}}
	registrytest.ExpectErrorsInOrder(t, "pv wrong everywhere", PersistentVolumeRules.Validate(bad),
		"spec.accessModes: FieldValueNotSupported", "spec.capacity[storage]: FieldValueInvalid", "spec.capacity[storage]: FieldValueInvalid",
		"spec.persistentVolumeReclaimPolicy: FieldValueNotSupported", "spec.nodeAffinity.required.nodeSelectorTerms: FieldValueRequired",
		"spec.hostPath.path: FieldValueInvalid", "spec.hostPath.type: FieldValueNotSupported", "spec.local: FieldValueForbidden")
	local := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv3"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("1")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/a/../b"}},
	}}
	registrytest.ExpectErrorsInOrder(t, "local pv without affinity", PersistentVolumeRules.Validate(local),
		"spec.accessModes: FieldValueForbidden", "spec.capacity: FieldValueNotSupported", "spec.local.path: FieldValueInvalid", "spec.nodeAffinity: FieldValueRequired")

	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: registrytest.ObjMeta("data"), Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
	}}
	registrytest.ExpectErrors(t, "claim without a size", registrytest.CreateSteps(PersistentVolumeClaimRules, pvc), "spec.resources[storage]: FieldValueRequired")
	pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	if errs := registrytest.CreateSteps(PersistentVolumeClaimRules, pvc); len(errs) > 0 || pvc.Status.Phase != corev1.ClaimPending {
		t.Fatal(errs.ToAggregate(), pvc.Status.Phase)
	}
	grown, moved := pvc.DeepCopy(), pvc.DeepCopy()
	grown.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	registrytest.ExpectErrors(t, "grown pending claim", registrytest.UpdateSteps(PersistentVolumeClaimRules, grown, pvc), "spec: FieldValueForbidden")
	bound := pvc.DeepCopy()
	bound.Spec.VolumeName, bound.Status.Phase = "pv", corev1.ClaimBound
	grown = bound.DeepCopy()
	grown.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	registrytest.ExpectErrors(t, "grown bound claim", registrytest.UpdateSteps(PersistentVolumeClaimRules, grown, bound))
	moved.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	registrytest.ExpectErrors(t, "new access mode", registrytest.UpdateSteps(PersistentVolumeClaimRules, moved, pvc), "spec: FieldValueForbidden")
}

func TestEndpointsRules(t *testing.T) {
	ep := &corev1.Endpoints{ObjectMeta: registrytest.ObjMeta("web"), Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "10.244.1.5"}, {IP: "127.0.0.1"}},
		Ports:     []corev1.EndpointPort{{Port: 8080}, {Name: "metrics", Port: 0}},
	}}}
	registrytest.ExpectErrors(t, "endpoints", registrytest.CreateSteps(EndpointsRules, ep),
		"subsets[0].addresses[1].ip: FieldValueInvalid", "subsets[0].ports[0].name: FieldValueRequired", "subsets[0].ports[1].port: FieldValueInvalid")
	if ep.Subsets[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Error("endpoint port protocol not defaulted")
	}
	ep.Subsets[0].Addresses = append(ep.Subsets[0].Addresses, corev1.EndpointAddress{IP: "10.244.1.6"}, corev1.EndpointAddress{IP: "10.244.1.7"})
	ep.Subsets[0].Ports = ep.Subsets[0].Ports[:1]
	if got := endpointsText(ep); got != "10.244.1.5:8080,127.0.0.1:8080,10.244.1.6:8080 + 1 more..." {
		t.Errorf("ENDPOINTS column: %q", got)
	}

	port := int32(80)
	slice := &discoveryv1.EndpointSlice{ObjectMeta: registrytest.ObjMeta("web-abc"), AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}}, {Addresses: []string{"fd00::1"}}, {}},
		Ports:     []discoveryv1.EndpointPort{{Port: &port}}}
	registrytest.ExpectErrors(t, "slice", registrytest.CreateSteps(EndpointSliceRules, slice), "endpoints[1].addresses: FieldValueInvalid", "endpoints[2].addresses: FieldValueRequired") // kube names the list for a wrong family
	if *slice.Ports[0].Protocol != corev1.ProtocolTCP || *slice.Ports[0].Name != "" {
		t.Error("slice port not defaulted")
	}
	changed := slice.DeepCopy()
	changed.AddressType = discoveryv1.AddressTypeIPv6
	changed.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"fd00::1"}}}
	registrytest.ExpectErrors(t, "new address type", registrytest.UpdateSteps(EndpointSliceRules, changed, slice), "addressType: FieldValueInvalid")
}

func TestQuotaAndLimitRangeRules(t *testing.T) {
	q := &corev1.ResourceQuota{ObjectMeta: registrytest.ObjMeta("q"), Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("-1")}}}
	registrytest.ExpectErrors(t, "negative quota", registrytest.CreateSteps(ResourceQuotaRules, q), "spec.hard[pods]: FieldValueInvalid")
	q.Status = corev1.ResourceQuotaStatus{
		Hard: corev1.ResourceList{"pods": resource.MustParse("10"), "limits.cpu": resource.MustParse("4")},
		Used: corev1.ResourceList{"pods": resource.MustParse("3"), "limits.cpu": resource.MustParse("1")},
	}
	if row := ResourceQuotaRules.Table.Row(q); row[1] != "pods: 3/10" || row[2] != "limits.cpu: 1/4" {
		t.Errorf("quota row: %v", row)
	}
	lr := &corev1.LimitRange{ObjectMeta: registrytest.ObjMeta("lr"), Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Min: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}}}}
	if errs := registrytest.CreateSteps(LimitRangeRules, lr); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	item := lr.Spec.Limits[0]
	if item.Default.Cpu().String() != "2" || item.DefaultRequest.Cpu().String() != "2" || item.DefaultRequest.Memory().String() != "64Mi" {
		t.Errorf("limit range item not defaulted: %+v", item)
	}
	lr.Spec.Limits[0].Min[corev1.ResourceCPU] = resource.MustParse("3")
	// The defaults (2, from max) are below min too, as kube tells.
	registrytest.ExpectErrors(t, "min above max", LimitRangeRules.Validate(lr), "spec.limits[0].min[cpu]: FieldValueInvalid",
		"spec.limits[0].defaultRequest[cpu]: FieldValueInvalid", "spec.limits[0].default[cpu]: FieldValueInvalid")
}

func TestEventTables(t *testing.T) {
	core := &corev1.Event{ObjectMeta: registrytest.ObjMeta("web.1"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web"},
		Type: "Normal", Reason: "Scheduled", Message: " placed ", Source: corev1.EventSource{Component: "default-scheduler"}}
	row := EventRules.Table.Row(core)
	if row[3] != "pod/web" || row[5] != "default-scheduler" || row[6] != "placed" || row[8] != int64(1) {
		t.Errorf("core event row: %v", row)
	}
	v1 := &eventsv1.Event{ObjectMeta: registrytest.ObjMeta("web.2"), Regarding: corev1.ObjectReference{Kind: "Node", Name: "n1"},
		EventTime: metav1.NowMicro(), ReportingController: "minilet", ReportingInstance: "n1", Note: "ready", Type: "Normal"}
	row = EventsV1Rules.Table.Row(v1)
	if row[3] != "node/n1" || row[5] != "minilet, n1" || row[6] != "ready" || row[7] == "<unknown>" {
		t.Errorf("events.k8s.io event row: %v", row)
	}
	v1.ReportingController = ""
	registrytest.ExpectErrors(t, "events.k8s.io event", EventsV1Rules.Validate(v1), "reportingController: FieldValueRequired",
		"reportingController: FieldValueInvalid", "reportingController: FieldValueInvalid", "action: FieldValueRequired", "reason: FieldValueRequired")
}
