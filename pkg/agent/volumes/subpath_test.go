package volumes

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// TestSubPathsAreMadeAsTheKubelet: a missing subPath is made in any volume with the
// mode of the volume's root (an emptyDir's 0777, an fsGroup's setgid), as the kubelet's
// SafeMakeDir, so a container that is not root can write in it; one reaching out of the
// volume through a symlink is refused with the kubelet's words and nothing is made outside.
func TestSubPathsAreMadeAsTheKubelet(t *testing.T) {
	empty, shared, cfg, outside := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Chmod(empty, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o770|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(empty, "escape")); err != nil {
		t.Fatal(err)
	}
	vols := map[string]Volume{"empty": {Path: empty}, "shared": {Path: shared}, "cfg": {Path: cfg, ReadOnly: true}}
	mount := func(vol, sub string) ([]runtime.Mount, error) {
		c := &corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: vol, MountPath: "/m", SubPath: sub}}}
		return ContainerMounts(c, vols)
	}

	for _, tc := range []struct {
		vol, sub string
		want     fs.FileMode
	}{
		{"empty", "a/b", fs.ModeDir | 0o777},
		{"shared", "logs", fs.ModeDir | fs.ModeSetgid | 0o770},
		{"cfg", "missing-key", fs.ModeDir | 0o755},
	} {
		if _, err := mount(tc.vol, tc.sub); err != nil {
			t.Errorf("subPath %q of %s: %v", tc.sub, tc.vol, err)
			continue
		}
		path := filepath.Join(vols[tc.vol].Path, tc.sub)
		for p := path; p != vols[tc.vol].Path; p = filepath.Dir(p) {
			if fi, err := os.Stat(p); err != nil || fi.Mode() != tc.want {
				t.Errorf("subPath %q of %s: %s is %v (%v), want %v", tc.sub, tc.vol, p, fi.Mode(), err, tc.want)
			}
		}
	}

	_, err := mount("empty", "escape/new")
	if want := `failed to create subPath directory for volumeMount "empty" of container "app"`; err == nil || err.Error() != want {
		t.Errorf("subPath through a symlink out of the volume: %v, want %s", err, want)
	}
	if _, err := os.Lstat(filepath.Join(outside, "new")); err == nil {
		t.Error("a directory was made outside the volume")
	}
	_, err = mount("empty", "escape")
	if want := `failed to prepare subPath for volumeMount "empty" of container "app"`; err == nil || err.Error() != want {
		t.Errorf("subPath that is a symlink out of the volume: %v, want %s", err, want)
	}
	// A subPathExpr can expand to what validation refuses in a subPath.
	_, err = mount("empty", "../x")
	if want := "unable to provision SubPath `../x`: must not contain '..'"; err == nil || err.Error() != want {
		t.Errorf("subPath with '..': %v, want %s", err, want)
	}
	_, err = mount("empty", "/x")
	if want := "error SubPath `/x` must not be an absolute path"; err == nil || err.Error() != want {
		t.Errorf("absolute subPath: %v, want %s", err, want)
	}
}
