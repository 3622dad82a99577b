package network

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"

	"github.com/moby/sys/mountinfo"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

func requireRoot(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t, "creates network namespaces and mounts")
}

// netnsDir returns a fresh directory for test namespaces and undoes the shared self-bind
// NewNetNS puts on it before the directory itself is removed.
func netnsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// newTestNetNS makes a namespace that is removed when the test ends, whatever its outcome.
func newTestNetNS(t *testing.T, dir, name string) string {
	t.Helper()
	path, err := NewNetNS(dir, name)
	if err != nil {
		t.Fatalf("NewNetNS(%s, %s): %v", dir, name, err)
	}
	t.Cleanup(func() {
		if err := RemoveNetNS(path); err != nil {
			t.Errorf("RemoveNetNS(%s): %v", path, err)
		}
	})
	return path
}

func mountAt(t *testing.T, path string) *mountinfo.Info {
	t.Helper()
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(path))
	if err != nil {
		t.Fatalf("read mountinfo: %v", err)
	}
	if len(mounts) == 0 {
		return nil
	}
	return mounts[len(mounts)-1]
}

func TestNewAndRemoveNetNS(t *testing.T) {
	requireRoot(t)
	dir := netnsDir(t)

	path, err := NewNetNS(dir, "a")
	if err != nil {
		t.Fatalf("NewNetNS: %v", err)
	}
	t.Cleanup(func() { RemoveNetNS(path) })

	if m := mountAt(t, dir); m == nil || !strings.Contains(m.Optional, "shared:") {
		t.Errorf("%s is not a shared mount point: %+v", dir, m)
	}
	if m := mountAt(t, path); m == nil || m.FSType != "nsfs" {
		t.Fatalf("%s is not an nsfs bind mount: %+v", path, m)
	}
	created, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer created.Close()
	current, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer current.Close()
	if created.Equal(current) {
		t.Fatal("NewNetNS returned the current namespace")
	}

	if _, err := NewNetNS(dir, "a"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second NewNetNS with the same name: err = %v, want 'already exists'", err)
	}
	if _, err := NewNetNS(dir, "../x"); err == nil {
		t.Error("NewNetNS accepted a name with a slash")
	}

	// No thread may stay behind in a namespace NewNetNS made (the main thread cannot be
	// discarded by Go, so a thread left locked there could be it).
	for i := range 20 {
		p, err := NewNetNS(dir, fmt.Sprintf("many-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		RemoveNetNS(p)
	}
	ours, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	threads, _ := filepath.Glob("/proc/self/task/*/ns/net")
	for _, th := range threads {
		if got, err := os.Readlink(th); err == nil && got != ours {
			t.Errorf("thread %s is in %s, not in our namespace %s", th, got, ours)
		}
	}

	if err := RemoveNetNS(path); err != nil {
		t.Fatalf("RemoveNetNS: %v", err)
	}
	if m := mountAt(t, path); m != nil {
		t.Errorf("mount left at %s: %+v", path, m)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s still exists: %v", path, err)
	}
	if err := RemoveNetNS(path); err != nil {
		t.Errorf("RemoveNetNS of a removed namespace: %v", err)
	}
	if err := RemoveNetNS(dir); err == nil {
		t.Error("RemoveNetNS accepted a directory")
	}
}

func TestInNetNS(t *testing.T) {
	requireRoot(t)
	path := newTestNetNS(t, netnsDir(t), "n")
	want, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()

	err = InNetNS(path, func() error {
		got, err := netns.Get()
		if err != nil {
			return err
		}
		defer got.Close()
		if !got.Equal(want) {
			t.Error("fn did not run in the namespace")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("InNetNS: %v", err)
	}
	sentinel := errors.New("from fn")
	if err := InNetNS(path, func() error { return sentinel }); !errors.Is(err, sentinel) {
		t.Errorf("InNetNS lost fn's error: %v", err)
	}
	if err := InNetNS(filepath.Join(path, "missing"), func() error { return nil }); err == nil {
		t.Error("InNetNS into a missing namespace succeeded")
	}
}

// TestNewNetNSOverAStaleFile: after a reboot the bind mount is gone but its file stays;
// it is not a namespace, and NewNetNS uses the name again.
func TestNewNetNSOverAStaleFile(t *testing.T) {
	requireRoot(t)
	dir := netnsDir(t)
	path, err := NewNetNS(dir, "pod")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RemoveNetNS(path) })
	if !IsNetNS(path) {
		t.Fatal("IsNetNS is false for a live namespace")
	}
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil { // what a reboot does
		t.Fatal(err)
	}
	if IsNetNS(path) {
		t.Fatal("IsNetNS is true for the file a gone namespace left")
	}
	again, err := NewNetNS(dir, "pod")
	if err != nil {
		t.Fatalf("NewNetNS over the stale file: %v", err)
	}
	if !IsNetNS(again) {
		t.Error("no namespace after NewNetNS over the stale file")
	}
}
