package network

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/minik8s/minik8s/internal/testenv"
)

// BenchmarkCNI measures what minilet's pod network costs per pod on this machine, inside a
// scratch node namespace: ADD+DEL (a pod's start and end) against CHECK (once a minute per
// running pod), with the real plugins.
func BenchmarkCNI(b *testing.B) {
	testenv.RequireRoot(b, "creates network namespaces")
	testenv.RequireFile(b, filepath.Join(debianCNIDir, "bridge"), "CNI plugins: Debian's containernetworking-plugins")
	root := b.TempDir()
	dir := filepath.Join(root, "netns")
	node, pod := benchNetNS(b, dir, "node"), benchNetNS(b, dir, "pod")
	cni, err := NewCNI(Config{PluginDirs: []string{debianCNIDir}, BridgeName: "cni0", PodCIDR: "10.244.7.0/24",
		CacheDir: filepath.Join(root, "cache"), IPAMDataDir: filepath.Join(root, "networks"), ConfDir: filepath.Join(root, "net.d")})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ref := PodRef{Namespace: "default", Name: "bench", UID: "uid"}
	in := func(fn func() error) {
		if err := InNetNS(node, fn); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("add+del", func(b *testing.B) {
		for b.Loop() {
			in(func() error {
				if _, err := cni.SetUp(ctx, "sb", pod, ref, PodOptions{}); err != nil {
					return err
				}
				return cni.TearDown(ctx, "sb", pod, ref)
			})
		}
	})
	in(func() error { _, err := cni.SetUp(ctx, "sb", pod, ref, PodOptions{}); return err })
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			in(func() error { return cni.Check(ctx, "sb", pod, ref) })
		}
	})
	in(func() error { return cni.TearDown(ctx, "sb", pod, ref) })
}

// BenchmarkSyncPodRoutes measures one host-gw sync of 100 other nodes' routes that are
// already in place (the 30 s resync, or a Node event that changes nothing), against its
// floor: listing the routing table once.
func BenchmarkSyncPodRoutes(b *testing.B) {
	testenv.RequireRoot(b, "creates network namespaces")
	node := benchNetNS(b, filepath.Join(b.TempDir(), "netns"), "node")
	var routes []PodRoute
	for i := range 100 {
		_, dst, _ := net.ParseCIDR(fmt.Sprintf("10.244.%d.0/24", i+2))
		routes = append(routes, PodRoute{Dst: dst, Gw: net.IPv4(10, 200, 0, byte(i+2))})
	}
	in := func(b *testing.B, fn func() error) {
		b.Helper()
		if err := InNetNS(node, fn); err != nil {
			b.Fatal(err)
		}
	}
	in(b, func() error {
		if err := onLink("10.200.0.1/24"); err != nil {
			return err
		}
		if failed := SyncPodRoutes(routes); len(failed) > 0 {
			return fmt.Errorf("%v", failed)
		}
		return nil
	})
	// Sub-benchmarks run on goroutines of their own: each switches into the namespace.
	b.Run("baseline-route-list", func(b *testing.B) {
		in(b, func() error {
			for b.Loop() {
				if _, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("sync-100-nodes", func(b *testing.B) {
		in(b, func() error {
			for b.Loop() {
				if failed := SyncPodRoutes(routes); len(failed) > 0 {
					return fmt.Errorf("%v", failed)
				}
			}
			return nil
		})
	})
}

func benchNetNS(b *testing.B, dir, name string) string {
	b.Helper()
	path, err := NewNetNS(dir, name)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = RemoveNetNS(path)
		_ = unix.Unmount(dir, unix.MNT_DETACH)
	})
	if err := InNetNS(path, func() error { return setLinkUp("lo") }); err != nil {
		b.Fatal(err)
	}
	return path
}
