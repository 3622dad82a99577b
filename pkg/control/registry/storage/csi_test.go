package storage

import (
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestCSIDriverRules(t *testing.T) {
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "tokens.example.com"}, Spec: storagev1.CSIDriverSpec{
		TokenRequests: []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr.To[int64](60)}, {Audience: "a"}},
		FSGroupPolicy: ptr.To(storagev1.FSGroupPolicy("Sometimes")), NodeAllocatableUpdatePeriodSeconds: ptr.To[int64](5),
		PreventPodSchedulingIfMissing: ptr.To(true)}}
	registrytest.ExpectErrors(t, "csi driver", registrytest.CreateSteps(CSIDriverRules, d), "spec.tokenRequests[0].expirationSeconds: FieldValueInvalid",
		"spec.tokenRequests[1].audience: FieldValueDuplicate", "spec.fsGroupPolicy: FieldValueNotSupported",
		"spec.nodeAllocatableUpdatePeriodSeconds: FieldValueInvalid")
	if d.Spec.PreventPodSchedulingIfMissing != nil {
		t.Errorf("a field of a disabled gate was kept")
	}
	if w := CSIDriverRules.Warnings(d, nil); len(w) != 1 {
		t.Errorf("token requests without serviceAccountTokenInSecrets: warnings %v", w)
	}
	// An update warns only when it changes the token requests, as kube's does.
	labeled := d.DeepCopy()
	labeled.Labels = map[string]string{"a": "b"}
	if w := CSIDriverRules.Warnings(labeled, d); len(w) != 0 {
		t.Errorf("an update leaving the token requests warned: %v", w)
	}
	labeled.Spec.TokenRequests = labeled.Spec.TokenRequests[:1]
	if w := CSIDriverRules.Warnings(labeled, d); len(w) != 1 {
		t.Errorf("an update changing the token requests: warnings %v", w)
	}
	old := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "modes.example.com", Generation: 3}}
	defaultCSIDriver(old)
	same := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "modes.example.com", Generation: 3}} // defaults left out
	registrytest.ExpectErrors(t, "unchanged driver", registrytest.UpdateSteps(CSIDriverRules, same, old))
	if same.Generation != 3 {
		t.Errorf("a spec equal once defaulted bumped the generation to %d", same.Generation)
	}
	changed := old.DeepCopy()
	changed.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
	registrytest.ExpectErrors(t, "changed modes", registrytest.UpdateSteps(CSIDriverRules, changed, old), "spec.volumeLifecycleModes: FieldValueInvalid")
	if changed.Generation != 4 {
		t.Errorf("generation after a spec change: %d", changed.Generation)
	}
}

func TestVolumeAttachmentRules(t *testing.T) {
	a := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "inline"}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "Not_A_Driver", NodeName: "node-1",
		Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &corev1.PersistentVolumeSpec{
			StorageClassName: "fast", PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com"}}}}},
		Status: storagev1.VolumeAttachmentStatus{AttachError: &storagev1.VolumeError{ErrorCode: ptr.To[int32](-1)}}}
	registrytest.ExpectErrors(t, "volume attachment", VolumeAttachmentRules.Validate(a), "spec.attacher: FieldValueInvalid",
		"spec.source.inlineVolumeSpec.accessModes: FieldValueRequired", "spec.source.inlineVolumeSpec.csi.volumeHandle: FieldValueRequired",
		"spec.source.inlineVolumeSpec.persistentVolumeReclaimPolicy: FieldValueForbidden",
		"spec.source.inlineVolumeSpec.storageClassName: FieldValueForbidden", "status.attachError.errorCode: FieldValueInvalid")
	if row := VolumeAttachmentRules.Table.Row(a); row[2] != "" || row[4] != false {
		t.Errorf("volume attachment row: %v", row)
	}
}

func TestVolumeAttributesClassRules(t *testing.T) {
	c := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "none"}, DriverName: "Example.com/x/y"}
	registrytest.ExpectErrors(t, "volume attributes class", registrytest.CreateSteps(VolumeAttributesClassRules, c), "driverName: FieldValueInvalid", "parameters: FieldValueRequired")
}

func TestCSINodeRules(t *testing.T) {
	count := int32(-1)
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "ebs.csi.aws.com", NodeID: "i-1", TopologyKeys: []string{"topology.ebs.csi.aws.com/zone"}},
		{Name: "ebs.csi.aws.com", NodeID: "", Allocatable: &storagev1.VolumeNodeResources{Count: &count}},
	}}}
	registrytest.ExpectErrors(t, "csi node", registrytest.CreateSteps(CSINodeRules, n), "spec.drivers[1].name: FieldValueDuplicate",
		"spec.drivers[1].nodeID: FieldValueRequired", "spec.drivers[1].allocatable.count: FieldValueInvalid")
	// kube's limit on a node ID is 256 characters, in kube's words.
	long := &storagev1.CSINode{ObjectMeta: n.ObjectMeta, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "a.csi.example.com", NodeID: strings.Repeat("n", 256)}, {Name: "b.csi.example.com", NodeID: strings.Repeat("n", 257)}}}}
	registrytest.ExpectErrors(t, "long node IDs", registrytest.CreateSteps(CSINodeRules, long), "spec.drivers[1].nodeID: FieldValueInvalid")
	registrytest.ExpectMessage(t, registrytest.CreateSteps(CSINodeRules, long), "spec.drivers[1].nodeID", "must be 256 characters or less")
	old := &storagev1.CSINode{ObjectMeta: n.ObjectMeta, Spec: storagev1.CSINodeSpec{Drivers: n.Spec.Drivers[:1]}}
	changed := old.DeepCopy()
	changed.Spec.Drivers[0].NodeID = "i-2"
	registrytest.ExpectErrors(t, "changed node ID", registrytest.UpdateSteps(CSINodeRules, changed, old), "spec.drivers: FieldValueInvalid")
	if row := CSINodeRules.Table.Row(old); row[1] != int64(1) {
		t.Errorf("csi node row: %v", row)
	}
}

// TestCSINodeAsKube: kube-apiserver v1.36.3's answers: a driver's name is checked
// lowercased, its topology keys under the driver's own path, and an update that changes a
// registered driver (but its allocatable count) names the whole driver as kube's internal
// type prints it.
func TestCSINodeAsKube(t *testing.T) {
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "cn"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "BadD", NodeID: "a", TopologyKeys: []string{"", "k", "k"}},
		{Name: "Bad_D", TopologyKeys: []string{"bad key!"}},
		{Name: "Bad_D", NodeID: "x"}}}}
	registrytest.ExpectMessages(t, "csi node", registrytest.CreateSteps(CSINodeRules, n),
		`spec.drivers[0]: Required value`,
		`spec.drivers[0]: Invalid value: "": name part must be non-empty`,
		`spec.drivers[0]: Invalid value: "": `+qualifiedNamePart,
		`spec.drivers[0]: Duplicate value: "k"`,
		`spec.drivers[1].name: Invalid value: "Bad_D": `+dns1123Subdomain,
		`spec.drivers[1].nodeID: Required value`,
		`spec.drivers[1]: Invalid value: "bad key!": `+qualifiedNamePart,
		`spec.drivers[2].name: Invalid value: "Bad_D": `+dns1123Subdomain,
		`spec.drivers[2].name: Duplicate value: "Bad_D"`)

	old := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "cn"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "d.example.com", NodeID: "a", TopologyKeys: []string{"k"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](1)}}}}}
	counted := old.DeepCopy()
	counted.Spec.Drivers[0].Allocatable.Count = ptr.To[int32](3)
	registrytest.ExpectMessages(t, "new count", registrytest.UpdateSteps(CSINodeRules, counted, old))
	moved := counted.DeepCopy()
	moved.Spec.Drivers[0].NodeID = "b"
	registrytest.ExpectMessages(t, "new node ID", registrytest.UpdateSteps(CSINodeRules, moved, old),
		`spec.drivers: Invalid value: {"Name":"d.example.com","NodeID":"b","TopologyKeys":["k"],"Allocatable":null}: field is immutable`)
}

const (
	dns1123Subdomain  = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	qualifiedNamePart = `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`
)
