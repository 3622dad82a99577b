// Package nettest gives tests throw-away network namespaces, so nothing they do reaches the
// host's network.
package nettest

import (
	"errors"
	"os"
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

// Named makes the network namespace name in /run/netns (lo up), deleted when the test ends,
// and returns its path: for tests that reach it by name (ip -n, ip netns exec) or hand it
// to the programs they run. It needs root: without it the test skips (fails under make
// test).
func Named(t *testing.T, name string) string {
	t.Helper()
	testenv.RequireRoot(t, "creates network namespaces")
	Run(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns delete %s: %v\n%s", name, err, out)
		}
	})
	Run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return "/run/netns/" + name
}

// SameNamespace says whether the namespace files a and b (/proc/PID/ns/net, /run/netns/NAME,
// a pod's bind mount...) are one namespace, failing the test when either cannot be read.
func SameNamespace(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(fa, fb)
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
