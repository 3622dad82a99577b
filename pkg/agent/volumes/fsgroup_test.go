package volumes

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestFSGroupChangePolicy: a local PV whose root already belongs to the fsGroup but holds
// a file of another group is walked when the pod mounts it under fsGroupChangePolicy
// Always (the default) and left as it is under OnRootMismatch, as the kubelet's
// skipPermissionChange; and it is walked once per mount, not at every sync of the pod.
func TestFSGroupChangePolicy(t *testing.T) {
	for _, tc := range []struct {
		policy *corev1.PodFSGroupChangePolicy
		walked bool
	}{
		{policy: nil, walked: true},
		{policy: ptr.To(corev1.FSGroupChangeAlways), walked: true},
		{policy: ptr.To(corev1.FSGroupChangeOnRootMismatch), walked: false},
	} {
		local := t.TempDir()
		if err := os.Chown(local, -1, 4321); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(local, 0o770|os.ModeSetgid); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(local, "old.db")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(file, -1, 0); err != nil {
			t.Fatal(err)
		}
		claim, volume := boundTo(corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: local}})
		m, _ := testManager(t, claim, volume)
		pod := volumePod(corev1.Volume{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}})
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](4321), FSGroupChangePolicy: tc.policy}
		if _, err := m.SetUp(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		walked := fi.Sys().(*syscall.Stat_t).Gid == 4321 && fi.Mode().Perm() == 0o660
		if walked != tc.walked {
			t.Errorf("policy %v: the PV's file has gid %d mode %v; walked %v, want %v", ptr.Deref(tc.policy, ""), fi.Sys().(*syscall.Stat_t).Gid, fi.Mode(), walked, tc.walked)
		}

		// The pod's next syncs do not walk the mounted volume again.
		if err := os.Chown(file, -1, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := m.SetUp(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(file); fi.Sys().(*syscall.Stat_t).Gid != 0 {
			t.Errorf("policy %v: the volume was walked again at the pod's next sync", ptr.Deref(tc.policy, ""))
		}
	}
}
