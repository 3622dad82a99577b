package registry

import (
	"testing"

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
	expectErrors(t, "csi driver", createSteps(csiDriverRules, d), "spec.tokenRequests[0].expirationSeconds: FieldValueInvalid",
		"spec.tokenRequests[1].audience: FieldValueDuplicate", "spec.fsGroupPolicy: FieldValueNotSupported",
		"spec.nodeAllocatableUpdatePeriodSeconds: FieldValueInvalid")
	if d.Spec.PreventPodSchedulingIfMissing != nil {
		t.Errorf("a field of a disabled gate was kept")
	}
	if w := csiDriverRules.Warnings(d); len(w) != 1 {
		t.Errorf("token requests without serviceAccountTokenInSecrets: warnings %v", w)
	}
	old := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "modes.example.com", Generation: 3}}
	defaultCSIDriver(old)
	same := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "modes.example.com", Generation: 3}} // defaults left out
	expectErrors(t, "unchanged driver", updateSteps(csiDriverRules, same, old))
	if same.Generation != 3 {
		t.Errorf("a spec equal once defaulted bumped the generation to %d", same.Generation)
	}
	changed := old.DeepCopy()
	changed.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
	expectErrors(t, "changed modes", updateSteps(csiDriverRules, changed, old), "spec.volumeLifecycleModes: FieldValueInvalid")
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
	expectErrors(t, "volume attachment", volumeAttachmentRules.Validate(a), "spec.attacher: FieldValueInvalid",
		"spec.source.inlineVolumeSpec.accessModes: FieldValueRequired", "spec.source.inlineVolumeSpec.csi.volumeHandle: FieldValueRequired",
		"spec.source.inlineVolumeSpec.persistentVolumeReclaimPolicy: FieldValueForbidden",
		"spec.source.inlineVolumeSpec.storageClassName: FieldValueForbidden", "status.attachError.errorCode: FieldValueInvalid")
	if row := volumeAttachmentRules.Table.Row(a); row[2] != "" || row[4] != false {
		t.Errorf("volume attachment row: %v", row)
	}
}

func TestVolumeAttributesClassRules(t *testing.T) {
	c := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "none"}, DriverName: "Example.com/x/y"}
	expectErrors(t, "volume attributes class", createSteps(volumeAttributesClassRules, c), "driverName: FieldValueInvalid", "parameters: FieldValueRequired")
}
