package network

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/network/cniconf"

	"github.com/vishvananda/netlink"
)

const debianCNIDir = "/usr/lib/cni"

func TestNewCNIRejectsBadConfig(t *testing.T) {
	empty := t.TempDir()
	base := Config{PluginDirs: []string{empty}, BridgeName: "cni0", PodCIDR: "10.244.1.0/24",
		CacheDir: filepath.Join(empty, "cache"), IPAMDataDir: filepath.Join(empty, "networks"), ConfDir: filepath.Join(empty, "net.d")}

	_, err := NewCNI(base)
	if err == nil || !strings.Contains(err.Error(), `"bridge"`) || !strings.Contains(err.Error(), empty) {
		t.Errorf("missing plugins: err = %v, want one naming the plugin and %s", err, empty)
	}

	testenv.RequireFile(t, filepath.Join(debianCNIDir, "bridge"), "CNI plugins: Debian's containernetworking-plugins")
	base.PluginDirs = []string{debianCNIDir}
	for name, mutate := range map[string]func(*Config){
		"bad CIDR":      func(c *Config) { c.PodCIDR = "10.244.1.0/33" },
		"no cache dir":  func(c *Config) { c.CacheDir = "" },
		"no IPAM dir":   func(c *Config) { c.IPAMDataDir = "" },
		"long bridge":   func(c *Config) { c.BridgeName = "a-very-long-bridge-name" },
		"negative MTU":  func(c *Config) { c.MTU = -1 },
		"no plugin dir": func(c *Config) { c.PluginDirs = nil },
		"no conf dir":   func(c *Config) { c.ConfDir = "" },
		"bad source":    func(c *Config) { c.Source = "magic" },
	} {
		cfg := base
		mutate(&cfg)
		if _, err := NewCNI(cfg); err == nil {
			t.Errorf("%s: NewCNI accepted %+v", name, cfg)
		}
	}
	if _, err := NewCNI(base); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	if _, err := os.Stat(filepath.Join(empty, "net.d", "10-minik8s.conflist")); err != nil {
		t.Errorf("conflist not written: %v", err)
	}

	// An operator's conflist is used as is; a plugin it names must be there.
	opDir := t.TempDir()
	file := Config{Source: ConfigFile, ConfDir: opDir, PluginDirs: []string{debianCNIDir}, CacheDir: filepath.Join(empty, "cache")}
	conf := `{"cniVersion":"1.0.0","name":"ops","plugins":[{"type":"bridge","bridge":"br-ops","ipam":{"type":"host-local","subnet":"10.9.0.0/24"}},{"type":"no-such-plugin"}]}`
	if err := os.WriteFile(filepath.Join(opDir, "50-ops.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCNI(file); err == nil || !strings.Contains(err.Error(), `"no-such-plugin"`) || !strings.Contains(err.Error(), "50-ops.conflist") {
		t.Errorf("operator conflist with a missing plugin: err = %v, want one naming the plugin and the file", err)
	}
	conf = strings.Replace(conf, `,{"type":"no-such-plugin"}`, "", 1)
	if err := os.WriteFile(filepath.Join(opDir, "50-ops.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cni, err := NewCNI(file)
	if err != nil {
		t.Fatalf("operator conflist: %v", err)
	}
	if cni.Name() != "ops" || cni.ConfPath() != filepath.Join(opDir, "50-ops.conflist") || cni.Ready() != nil {
		t.Errorf("operator conflist: network %q from %s, ready: %v", cni.Name(), cni.ConfPath(), cni.Ready())
	}
}

// TestFileConfigAwaited: with --cni-config=file and no configuration yet, the network is not
// ready ("cni plugin not initialized", as containerd's CRI says until a CNI is installed) and
// sets up no pod; a configuration written later is taken up by the next Ready, once every
// plugin it names is there (a DaemonSet installing a CNI writes both).
func TestFileConfigAwaited(t *testing.T) {
	opDir := t.TempDir()
	file := Config{Source: ConfigFile, ConfDir: opDir, PluginDirs: []string{debianCNIDir}, CacheDir: filepath.Join(t.TempDir(), "cache")}
	cni, err := NewCNI(file)
	if err != nil {
		t.Fatalf("empty --cni-conf-dir: %v, want a network waiting for its configuration", err)
	}
	if err := cni.Ready(); !errors.Is(err, ErrNotInitialized) || err.Error() != "cni plugin not initialized" {
		t.Errorf("ready with no configuration: %v, want %v", err, ErrNotInitialized)
	}
	if _, err := cni.SetUp(context.Background(), "sb", "/nonexistent", PodRef{Namespace: "default", Name: "p", UID: "u"}, PodOptions{}); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("SetUp with no configuration: %v, want %v", err, ErrNotInitialized)
	}
	conf := `{"cniVersion":"1.0.0","name":"late","plugins":[{"type":"bridge","bridge":"br-late","ipam":{"type":"host-local","subnet":"10.9.0.0/24"}},{"type":"no-such-plugin"}]}`
	if err := os.WriteFile(filepath.Join(opDir, "10-late.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cni.Ready(); err == nil || !strings.Contains(err.Error(), `"no-such-plugin"`) || !strings.Contains(err.Error(), "10-late.conflist") {
		t.Errorf("ready with a plugin missing: %v, want an error naming the plugin and the file", err)
	}
	conf = strings.Replace(conf, `,{"type":"no-such-plugin"}`, "", 1)
	if err := os.WriteFile(filepath.Join(opDir, "10-late.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cni.Ready(); err != nil {
		t.Fatalf("ready once configured: %v", err)
	}
	if cni.Name() != "late" || cni.ConfPath() != filepath.Join(opDir, "10-late.conflist") {
		t.Errorf("network %q from %s, want late from 10-late.conflist", cni.Name(), cni.ConfPath())
	}
	// The directory is read again as containerd watches it: a file first in name order
	// takes over, a broken one makes the network not ready, removing it gives the other
	// back, and an empty directory is no network again.
	early := filepath.Join(opDir, "05-early.conflist")
	if err := os.WriteFile(early, []byte(strings.Replace(conf, `"late"`, `"early"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cni.Ready(); err != nil || cni.Name() != "early" || cni.ConfPath() != early {
		t.Errorf("after 05-early.conflist was written: ready %v, network %q from %s; want early", err, cni.Name(), cni.ConfPath())
	}
	if err := os.WriteFile(early, []byte(`{"cniVersion":"1.0.0","name":"early","plugins":[{"type":"no-such-plugin"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cni.Ready(); err == nil || !strings.Contains(err.Error(), `"no-such-plugin"`) {
		t.Errorf("after 05-early.conflist names a missing plugin: ready %v, want an error naming it", err)
	}
	if _, err := cni.SetUp(context.Background(), "sb", "/nonexistent", PodRef{Namespace: "default", Name: "p", UID: "u"}, PodOptions{}); err == nil || !strings.Contains(err.Error(), `"no-such-plugin"`) {
		t.Errorf("SetUp with a broken configuration: %v, want its error", err)
	}
	if err := os.Remove(early); err != nil {
		t.Fatal(err)
	}
	if err := cni.Ready(); err != nil || cni.Name() != "late" {
		t.Errorf("after 05-early.conflist was removed: ready %v, network %q; want late again", err, cni.Name())
	}
	if err := os.Remove(filepath.Join(opDir, "10-late.conflist")); err != nil {
		t.Fatal(err)
	}
	if err := cni.Ready(); !errors.Is(err, ErrNotInitialized) || cni.ConfPath() != "" {
		t.Errorf("after the last configuration was removed: ready %v from %q, want %v", err, cni.ConfPath(), ErrNotInitialized)
	}
}

// TestPodNetwork plays a node inside a namespace of its own: two pods on its bridge reach
// each other, a hostPort reaches a pod, and tear-down frees addresses and rules.
func TestPodNetwork(t *testing.T) {
	requireRoot(t)
	testenv.RequireFile(t, filepath.Join(debianCNIDir, "bridge"), "CNI plugins: Debian's containernetworking-plugins")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	root := t.TempDir()
	nsDir := netnsDir(t)
	node := newTestNetNS(t, nsDir, "node")
	podA := newTestNetNS(t, nsDir, "pod-a")
	podB := newTestNetNS(t, nsDir, "pod-b")
	inNode := func(fn func() error) {
		t.Helper()
		if err := InNetNS(node, fn); err != nil {
			t.Fatal(err)
		}
	}
	inNode(func() error { return setLinkUp("lo") }) // local delivery (hostPort on the node) needs lo

	cfg := Config{PluginDirs: []string{debianCNIDir}, BridgeName: "cni0", PodCIDR: "10.244.7.0/24",
		CacheDir: filepath.Join(root, "cni", "cache"), IPAMDataDir: filepath.Join(root, "cni", "networks"), MTU: 1400,
		ConfDir: filepath.Join(root, "cni", "net.d")}
	cni, err := NewCNI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	refA := PodRef{Namespace: "default", Name: "a", UID: "uid-a"}
	refB := PodRef{Namespace: "default", Name: "b", UID: "uid-b"}
	var ipA, ipB net.IP
	inNode(func() (err error) {
		ipA, err = cni.SetUp(ctx, "sandbox-a", podA, refA, PodOptions{Bandwidth: &cniconf.Bandwidth{IngressRate: 8_000_000, IngressBurst: math.MaxInt32}})
		return err
	})
	t.Cleanup(func() { InNetNS(node, func() error { return cni.TearDown(ctx, "sandbox-a", podA, refA) }) })
	inNode(func() (err error) {
		ipB, err = cni.SetUp(ctx, "sandbox-b", podB, refB, PodOptions{Ports: []PortMapping{{HostPort: 18080, ContainerPort: 8080, Protocol: "TCP"}}})
		return err
	})
	t.Cleanup(func() { InNetNS(node, func() error { return cni.TearDown(ctx, "sandbox-b", podB, refB) }) })

	_, podNet, _ := net.ParseCIDR(cfg.PodCIDR)
	gateway := net.ParseIP("10.244.7.1")
	for _, ip := range []net.IP{ipA, ipB} {
		if !podNet.Contains(ip) || ip.Equal(gateway) {
			t.Errorf("pod IP %v is not a pod address in %s", ip, podNet)
		}
	}
	if ipA.Equal(ipB) {
		t.Fatalf("both pods got %v", ipA)
	}
	ipamFile := func(ip net.IP) string { return filepath.Join(cfg.IPAMDataDir, NetworkName, ip.String()) }
	if _, err := os.Stat(ipamFile(ipB)); err != nil {
		t.Errorf("host-local has no record of %v: %v", ipB, err)
	}

	if err := InNetNS(podA, func() error {
		for _, name := range []string{"eth0", "lo"} {
			l, err := netlink.LinkByName(name)
			if err != nil {
				return err
			}
			if l.Attrs().Flags&net.FlagUp == 0 {
				t.Errorf("pod interface %s is down", name)
			}
			if name == "eth0" && l.Attrs().MTU != cfg.MTU {
				t.Errorf("pod eth0 MTU = %d, want %d", l.Attrs().MTU, cfg.MTU)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	if out, err := exec.CommandContext(ctx, "nsenter", "--net="+podA, "busybox", "ping", "-c", "1", "-W", "2", ipB.String()).CombinedOutput(); err != nil {
		t.Errorf("ping pod B from pod A: %v\n%s", err, out)
	}

	serveHello(t, podB, net.JoinHostPort(ipB.String(), "8080"))
	if got := dialHello(t, podA, net.JoinHostPort(ipB.String(), "8080")); got != "hello" {
		t.Errorf("pod A → pod B over TCP read %q", got)
	}
	if got := dialHello(t, node, net.JoinHostPort(gateway.String(), "18080")); got != "hello" {
		t.Errorf("node hostPort 18080 → pod B read %q", got)
	}

	// Pod A's ingress is shaped on its host-side veth.
	if out, err := exec.CommandContext(ctx, "nsenter", "--net="+node, "tc", "qdisc", "show").CombinedOutput(); err != nil || !strings.Contains(string(out), "tbf") || !strings.Contains(string(out), "8Mbit") {
		t.Errorf("no 8Mbit tbf qdisc for pod A's ingress-bandwidth in the node: %v\n%s", err, out)
	}

	// CHECK passes on an intact pod network and fails once its default route is gone.
	for _, c := range []struct {
		id, ns string
		ref    PodRef
	}{{"sandbox-a", podA, refA}, {"sandbox-b", podB, refB}} {
		if err := InNetNS(node, func() error { return cni.Check(ctx, c.id, c.ns, c.ref) }); err != nil {
			t.Errorf("CHECK of intact %s: %v", c.id, err)
		}
	}
	if out, err := exec.CommandContext(ctx, "nsenter", "--net="+podA, "ip", "route", "del", "default").CombinedOutput(); err != nil {
		t.Fatalf("delete pod A's default route: %v\n%s", err, out)
	}
	if err := InNetNS(node, func() error { return cni.Check(ctx, "sandbox-a", podA, refA) }); err == nil {
		t.Errorf("CHECK passed with pod A's default route gone")
	}

	// Tear-down: B normally (twice: DEL is idempotent), A after its namespace is gone.
	inNode(func() error { return cni.TearDown(ctx, "sandbox-b", podB, refB) })
	inNode(func() error { return cni.TearDown(ctx, "sandbox-b", podB, refB) })
	if _, err := os.Stat(ipamFile(ipB)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("IP %v still allocated after TearDown: %v", ipB, err)
	}
	if out, err := exec.CommandContext(ctx, "nsenter", "--net="+node, "iptables-save", "-t", "nat").CombinedOutput(); err != nil {
		t.Errorf("iptables-save in node: %v\n%s", err, out)
	} else if strings.Contains(string(out), "18080") {
		t.Errorf("hostPort rule left after TearDown:\n%s", out)
	}

	if err := RemoveNetNS(podA); err != nil {
		t.Fatal(err)
	}
	inNode(func() error { return cni.TearDown(ctx, "sandbox-a", podA, refA) })
	if _, err := os.Stat(ipamFile(ipA)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("IP %v still allocated after TearDown without namespace: %v", ipA, err)
	}
}

func setLinkUp(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	return netlink.LinkSetUp(l)
}

// serveHello answers every connection to addr, inside the namespace nsPath, with "hello".
func serveHello(t *testing.T, nsPath, addr string) {
	t.Helper()
	var ln net.Listener
	if err := InNetNS(nsPath, func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
}

// dialHello connects to addr from inside nsPath and returns the first line it reads.
func dialHello(t *testing.T, nsPath, addr string) string {
	t.Helper()
	var c net.Conn
	if err := InNetNS(nsPath, func() (err error) {
		c, err = net.DialTimeout("tcp", addr, 5*time.Second)
		return err
	}); err != nil {
		t.Errorf("dial %s: %v", addr, err)
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Errorf("read from %s: %v", addr, err)
	}
	return strings.TrimSpace(line)
}
