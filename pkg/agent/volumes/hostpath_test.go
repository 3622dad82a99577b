package volumes

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestHostPathMadeAsOnAKubeletNode: a hostPath of no type that is missing is made as a
// directory (0755), as the container runtime (containerd's CRI) makes a missing mount
// source, so the pod runs instead of failing to start its container; FileOrCreate makes
// the file but not its directory, the kubelet's makeFile, so a missing directory fails
// the mount with the error of open(2).
func TestHostPathMadeAsOnAKubeletNode(t *testing.T) {
	dir := t.TempDir()
	unset := filepath.Join(dir, "logs/app")
	if err := checkHostPath(&corev1.HostPathVolumeSource{Path: unset}); err != nil {
		t.Errorf("hostPath %s of no type: %v", unset, err)
	}
	if fi, err := os.Stat(unset); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Errorf("hostPath of no type: %v (%v), want a directory 0755", fi, err)
	}

	file := filepath.Join(dir, "missing/file")
	err := checkHostPath(&corev1.HostPathVolumeSource{Path: file, Type: ptr.To(corev1.HostPathFileOrCreate)})
	if want := "open " + file + ": no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("FileOrCreate in a missing directory: %v, want %s", err, want)
	}
}
