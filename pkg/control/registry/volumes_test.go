package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClaimRequestUpdates: a bound claim may keep a request below its volume's capacity
// (a claim bound to a bigger volume, whose update to set a finalizer or deletion must pass)
// and shrink a request only while it stays above the capacity.
func TestClaimRequestUpdates(t *testing.T) {
	bound := func(request string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "1"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv",
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}},
		}
	}
	for _, tc := range []struct {
		name     string
		old, new string
		ok       bool
	}{
		{"unchanged below capacity", "2Gi", "2Gi", true},
		{"grow", "5Gi", "8Gi", true},
		{"shrink above capacity", "10Gi", "6Gi", true},
		{"shrink to capacity", "10Gi", "5Gi", false},
		{"shrink below capacity", "10Gi", "4Gi", false},
	} {
		old, upd := bound(tc.old), bound(tc.new)
		upd.Finalizers = []string{"kubernetes.io/pvc-protection"}
		errs := persistentVolumeClaimRules.ValidateUpdate(upd, old)
		if (len(errs) == 0) != tc.ok {
			t.Errorf("%s: errors %v, want ok=%v", tc.name, errs, tc.ok)
		}
	}
}
