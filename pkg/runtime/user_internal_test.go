package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestResolveUserFollowsAbsoluteSymlinks: an image's /etc/passwd and /etc/group may be
// absolute symlinks, which os.Root alone refuses; they resolve inside the image.
func TestResolveUserFollowsAbsoluteSymlinks(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"etc", "usr/lib"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"usr/lib/passwd": "root:x:0:0::/:/bin/sh\napp:x:1000:1000::/:/bin/sh\n",
		"usr/lib/group":  "app:x:1000:\nstaff:x:50:app\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/"+name, filepath.Join(dir, "etc", filepath.Base(name))); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	u, err := resolveUser(root, "app")
	if err != nil {
		t.Fatal(err)
	}
	if u.UID != 1000 || u.GID != 1000 || !slices.Equal(u.AdditionalGids, []uint32{1000, 50}) {
		t.Errorf("user app = %+v, want 1000:1000 with groups 1000 50", u)
	}
	if _, err := resolveUser(root, "app:nosuch"); err == nil {
		t.Error("a group missing from /etc/group was accepted")
	}
	if _, err := resolveUser(root, "-1"); err == nil {
		t.Error("a negative uid was accepted")
	}
}
