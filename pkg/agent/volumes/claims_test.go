package volumes

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// TestClaimNotTakenIsWaitError: a claim the kubelet's desired-state populator cannot take
// (createVolumeSpec) is no failed mount: no MountVolume.SetUp error, no back-off, but
// the error WaitForAttachAndMount returns, with the populator's words, while a container
// mounts the volume; a volume no container mounts stops nothing.
func TestClaimNotTakenIsWaitError(t *testing.T) {
	host := t.TempDir()
	const prefix = `unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC default/data: `
	for _, tc := range []struct {
		name  string
		edit  func(*corev1.PersistentVolumeClaim, *corev1.PersistentVolume)
		claim bool // the claim is there
		want  string
	}{
		{name: "missing", want: prefix + `failed to fetch PVC from API server: persistentvolumeclaims "data" not found`},
		{name: "pending", claim: true, edit: func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
			c.Status.Phase = corev1.ClaimPending
		},
			want: prefix + "PVC is not bound"},
		{name: "deleted unprotected", claim: true, edit: func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
			c.DeletionTimestamp = &metav1.Time{}
		},
			want: prefix + "PVC is being deleted"},
		{name: "deleted protected", claim: true, edit: func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
			c.DeletionTimestamp, c.Finalizers = &metav1.Time{}, []string{"kubernetes.io/pvc-protection"}
		}},
		{name: "volume of another claim", claim: true, edit: func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) { v.Spec.ClaimRef.UID = "other" },
			want: prefix + "found PV object pv1 but its pv.Spec.ClaimRef.UID other does not point to claim.UID claim-uid"},
	} {
		claim, volume := boundClaim(host)
		if tc.edit != nil {
			tc.edit(claim, volume)
		}
		objects := []runtime.Object{volume}
		if tc.claim {
			objects = append(objects, claim)
		}
		pod := volumePod(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}})
		pod.Spec.Containers[0].VolumeMounts = nil
		m, _ := testManager(t, objects...)
		if _, err := m.SetUp(context.Background(), pod); err != nil {
			t.Errorf("%s, no container mounts it: %v", tc.name, err)
		}

		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		vols, err := m.SetUp(context.Background(), pod)
		var mountErr *MountError
		switch {
		case tc.want == "":
			if err != nil || vols["data"].Path != host {
				t.Errorf("%s: %+v, %v; want it set up", tc.name, vols, err)
			}
			continue
		case !errors.As(err, &mountErr) || mountErr.Unprocessed() == nil:
			t.Errorf("%s: %v, want an error not taking the claim", tc.name, err)
			continue
		}
		if got := mountErr.Unprocessed().Error(); got != tc.want || len(mountErr.Unwrap()) > 0 {
			t.Errorf("%s: %q (mount errors %v), want only %q", tc.name, got, mountErr.Unwrap(), tc.want)
		}
		// Taken once bound, at once: the populator retries at each of its loops.
		claim, volume = boundClaim(host)
		m.client = fake.NewClientset(claim, volume)
		if vols, err := m.SetUp(context.Background(), pod); err != nil || vols["data"].Path != host {
			t.Errorf("%s, then bound: %+v, %v; want it set up", tc.name, vols, err)
		}
	}
}
