package network

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestBindCurrentNetNS: called inside a node namespace, BindCurrentNetNS mounts that
// namespace (not the host's), keeps a good mount, replaces the plain file a reboot leaves,
// and RemoveBoundNetNS takes it all away.
func TestBindCurrentNetNS(t *testing.T) {
	requireRoot(t)
	node := newTestNetNS(t, netnsDir(t), "node")
	dir := filepath.Join(t.TempDir(), "nodens")
	bind := func() (string, bool) {
		t.Helper()
		var path string
		var isHost bool
		err := InNetNS(node, func() (err error) {
			path, isHost, err = BindCurrentNetNS(dir, "net")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return path, isHost
	}
	path, isHost := bind()
	t.Cleanup(func() {
		if err := RemoveBoundNetNS(dir, "net"); err != nil {
			t.Error(err)
		}
	})
	if isHost {
		t.Error("a node namespace is reported as the host's")
	}
	if same, err := sameFile(path, node); err != nil || !same {
		t.Fatalf("%s is not the node namespace it was bound in (%v)", path, err)
	}

	// Again: the same mount is kept, not stacked.
	if again, _ := bind(); again != path || mountAt(t, path) == nil {
		t.Fatalf("second bind: %s", again)
	}
	if err := RemoveNetNS(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("one unmount left %s behind: %v", path, err)
	}

	// After a reboot: a plain file where the mount was.
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if IsNetNS(path) {
		t.Fatal("a plain file passes for a namespace")
	}
	bind()
	if same, err := sameFile(path, node); err != nil || !same {
		t.Fatalf("stale file not replaced by the node namespace (%v)", err)
	}

	// From a thread in the host's namespace (the test runs there): isHost.
	hostDir := filepath.Join(t.TempDir(), "hostns")
	if _, isHost, err := BindCurrentNetNS(hostDir, "net"); err != nil || !isHost {
		t.Errorf("bound in the host's namespace: isHost %v, err %v", isHost, err)
	}
	if err := RemoveBoundNetNS(hostDir, "net"); err != nil {
		t.Error(err)
	}

	if err := RemoveBoundNetNS(dir, "net"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after RemoveBoundNetNS: %v", err)
	}
	if m := mountAt(t, dir); m != nil {
		t.Errorf("%s is still a mount point", dir)
	}
}
