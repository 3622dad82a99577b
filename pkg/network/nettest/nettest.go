// Package nettest gives tests of pkg/network's packages throw-away network namespaces, so
// nothing they do reaches the host's network.
package nettest

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/network"
)

// NetNS makes one namespace per name (lo up), removed when the test ends, and returns
// their paths. It needs root: without it the test skips (fails under make test).
func NetNS(t *testing.T, names ...string) []string {
	t.Helper()
	testenv.RequireRoot(t, "creates network namespaces")
	dir := t.TempDir()
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	var paths []string
	for _, name := range names {
		path, err := network.NewNetNS(dir, name)
		if err != nil {
			t.Fatalf("new network namespace %s: %v", name, err)
		}
		t.Cleanup(func() {
			if err := network.RemoveNetNS(path); err != nil {
				t.Errorf("remove %s: %v", path, err)
			}
		})
		In(t, path, func() error {
			lo, err := netlink.LinkByName("lo")
			if err != nil {
				return err
			}
			return netlink.LinkSetUp(lo)
		})
		paths = append(paths, path)
	}
	return paths
}

// In runs fn inside the namespace at path, failing the test on error.
func In(t *testing.T, path string, fn func() error) {
	t.Helper()
	if err := network.InNetNS(path, fn); err != nil {
		t.Fatal(err)
	}
}

// Run runs a command (ip, iptables, ...) that sets up a test's namespaces, failing the test
// with its output when it fails.
func Run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
