package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/moby/sys/mountinfo"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "lab1", "e2e-3", "x-y-z", strings.Repeat("a", MaxNameLen)} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "A", "-a", "a-", "a_b", "a.b", "a/b", strings.Repeat("a", MaxNameLen+1)} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("ValidateName(%q) accepted it", bad)
		}
	}
	if _, err := Create(Spec{Name: "Bad", Nodes: 1}); err == nil {
		t.Error("Create accepted a bad name")
	}
	for _, n := range []int{0, MaxNodes + 1} {
		if _, err := Create(Spec{Name: "ok", Nodes: n}); err == nil || !strings.Contains(err.Error(), "nodes") {
			t.Errorf("Create with %d nodes: err = %v", n, err)
		}
	}
}

func TestNetNSPatternKeepsLabsApart(t *testing.T) {
	re := netnsPattern("a")
	for name, want := range map[string]bool{
		"mk-a-sw": true, "mk-a-cp": true, "mk-a-node-12": true, "mk-a-sw1": true, "mk-a-rt": true, "mk-a-client": true,
		"mk-a-b-sw": false, "mk-a-node-1-cp": false, "mk-a-node-x": false, "mk-ab-sw": false,
	} {
		if got := re.MatchString(name); got != want {
			t.Errorf("lab a matches %s: %v, want %v", name, got, want)
		}
	}
}

// testLab creates a lab with a unique name that is destroyed when the test ends.
func testLab(t *testing.T, nodes int) *Lab {
	t.Helper()
	return testLabSpec(t, Spec{Nodes: nodes})
}

func testLabSpec(t *testing.T, spec Spec) *Lab {
	t.Helper()
	testenv.RequireRoot(t, "creates network namespaces, links and mounts")
	testenv.RequireFile(t, "/usr/bin/nsenter", "Debian's util-linux")
	b := make([]byte, 4)
	rand.Read(b)
	name := "t" + hex.EncodeToString(b)
	spec.Name = name
	l, err := Create(spec)
	if err != nil {
		Destroy(name)
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if err := Destroy(name); err != nil {
			t.Errorf("Destroy in cleanup: %v", err)
		}
	})
	return l
}

func TestLabLifecycle(t *testing.T) {
	hostLinksBefore := linkNames(t)
	hostRoutesBefore := routesInto(t, Subnet, ClusterCIDR) // e.g. `make up`'s cluster on this host
	l := testLab(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n1, n2 := l.Nodes[0], l.Nodes[1]

	// Topology.
	wantNS := []string{l.SwitchNetNS, l.ControlPlane.NetNS, n1.NetNS, n2.NetNS}
	if want := []string{"mk-" + l.Name + "-sw", "mk-" + l.Name + "-cp", "mk-" + l.Name + "-node-1", "mk-" + l.Name + "-node-2"}; fmt.Sprint(wantNS) != fmt.Sprint(want) {
		t.Errorf("namespaces %v, want %v", wantNS, want)
	}
	if n2.IP != "10.200.0.12" || n2.PodCIDR != "10.244.2.0/24" || l.ControlPlane.IP != "10.200.0.2" {
		t.Errorf("addressing: cp %s, node-2 %s %s", l.ControlPlane.IP, n2.IP, n2.PodCIDR)
	}
	// Each node's resolver is the lab's upstream DNS server, whose names are written for it.
	for _, n := range l.Nodes {
		if got, err := os.ReadFile(n.ResolvConf); err != nil || string(got) != "nameserver 10.200.0.2\n" {
			t.Errorf("%s's resolv.conf %q (%v), want the lab's upstream DNS server", n.Name, got, err)
		}
	}
	if hosts, err := os.ReadFile(l.UpstreamDNSHosts); err != nil || !strings.Contains(string(hosts), "10.200.0.2\thost.example.test cp.example.test\n") ||
		!strings.Contains(string(hosts), "10.200.0.12\tnode-2.example.test\n") {
		t.Errorf("upstream DNS names:\n%s (%v)", hosts, err)
	}
	inNS(t, l.SwitchNetNS, func() error {
		br, err := netlink.LinkByName(BridgeName)
		if err != nil {
			return err
		}
		for _, port := range []string{"cp", "node-1", "node-2"} {
			link, err := netlink.LinkByName(port)
			if err != nil {
				return err
			}
			if link.Attrs().MasterIndex != br.Attrs().Index || link.Attrs().Flags&net.FlagUp == 0 {
				t.Errorf("switch port %s is not an up port of %s", port, BridgeName)
			}
		}
		return nil
	})
	for _, m := range []Member{l.ControlPlane, {Name: n1.Name, NetNS: n1.NetNS, IP: n1.IP}, {Name: n2.Name, NetNS: n2.NetNS, IP: n2.IP}} {
		inNS(t, m.NetNS, func() error {
			eth0, err := netlink.LinkByName(MemberInterface)
			if err != nil {
				return err
			}
			addrs, err := netlink.AddrList(eth0, netlink.FAMILY_V4)
			if err != nil {
				return err
			}
			if len(addrs) != 1 || addrs[0].IPNet.String() != m.IP+"/24" {
				t.Errorf("%s eth0 addresses %v, want %s/24", m.NetNS, addrs, m.IP)
			}
			routes, err := netlink.RouteList(nil, netlink.FAMILY_ALL)
			if err != nil {
				return err
			}
			for _, r := range routes {
				if r.Dst == nil || r.Dst.IP.IsUnspecified() {
					t.Errorf("%s has a default route: %v", m.NetNS, r)
				}
			}
			return nil
		})
	}
	// The control plane reaches pods (miniapi's pods/proxy) via their node.
	inNS(t, l.ControlPlane.NetNS, func() error {
		routes, err := netlink.RouteGet(net.ParseIP("10.244.2.5"))
		if err != nil || len(routes) != 1 || !routes[0].Gw.Equal(net.ParseIP(n2.IP)) {
			t.Errorf("the control plane routes node-2's pods via %v (%v), want %s", routes, err, n2.IP)
		}
		return nil
	})
	inNS(t, n1.NetNS, func() error {
		// Pod CIDRs are minilet's to route (--pod-network), not the lab's.
		if routes, err := netlink.RouteGet(net.ParseIP("10.244.2.5")); err == nil {
			t.Errorf("the lab routes node-2's pods itself: %v", routes)
		}
		return nil
	})
	for _, hop := range []struct{ from, to string }{{n1.NetNS, n2.IP}, {l.ControlPlane.NetNS, n2.IP}} {
		if out, err := Command(ctx, hop.from, "busybox", "ping", "-c", "1", "-W", "2", hop.to).CombinedOutput(); err != nil {
			t.Errorf("ping %s from %s: %v\n%s", hop.to, hop.from, err, out)
		}
	}
	if out, err := exec.CommandContext(ctx, "ip", "netns", "exec", n2.NetNS, "busybox", "ping", "-c", "1", "-W", "2", l.ControlPlane.IP).CombinedOutput(); err != nil {
		t.Errorf("ip netns exec ping: %v\n%s", err, out)
	}

	// The host namespace is untouched.
	if after := linkNames(t); fmt.Sprint(after) != fmt.Sprint(hostLinksBefore) {
		t.Errorf("host links changed: %v → %v", hostLinksBefore, after)
	}
	if after := routesInto(t, Subnet, ClusterCIDR); fmt.Sprint(after) != fmt.Sprint(hostRoutesBefore) {
		t.Errorf("the lab changed the host's routes into %s and %s: %v → %v", Subnet, ClusterCIDR, hostRoutesBefore, after)
	}

	// lab.json.
	loaded, err := Load(l.Name)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(loaded.Nodes) != fmt.Sprint(l.Nodes) || loaded.ControlPlane != l.ControlPlane {
		t.Errorf("Load = %+v, want %+v", loaded, l)
	}

	// Processes: a recorded daemon, one stopped again, one nobody recorded, a pod namespace.
	pid, err := l.Start(Process{Name: "sleeper", NetNS: n1.NetNS, Args: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	waitInNetNS(t, pid, n1.NetNS)
	if _, err := l.Start(Process{Name: "sleeper", NetNS: n1.NetNS, Args: []string{"sleep", "1"}}); err == nil {
		t.Error("a second process named sleeper started")
	}
	if loaded, err := Load(l.Name); err != nil || len(loaded.Processes) != 1 || loaded.Processes[0].PID != pid {
		t.Errorf("lab.json processes = %+v (err %v), want sleeper PID %d", loaded.Processes, err, pid)
	}
	if _, err := os.Stat(filepath.Join(l.StateDir, "logs", "sleeper.log")); err != nil {
		t.Errorf("no log: %v", err)
	}
	sleeperStart, _, _ := procStat(pid)

	stopped, err := l.Start(Process{Name: "stopped", NetNS: n2.NetNS, Args: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	stoppedStart, _, _ := procStat(stopped)
	if err := l.Stop("stopped", 5*time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if alive(stopped, stoppedStart) || len(l.Processes) != 1 {
		t.Errorf("after Stop: alive %v, records %+v", alive(stopped, stoppedStart), l.Processes)
	}

	hostPID, err := l.Start(Process{Name: "in-host-netns", Args: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	hostStart, _, _ := procStat(hostPID)
	self, _ := os.Readlink("/proc/self/ns/net")
	if nsLink := fmt.Sprintf("/proc/%d/ns/net", hostPID); self == "" || !waitLink(nsLink, self) {
		got, _ := os.Readlink(nsLink)
		t.Errorf("process started with no NetNS is in %s, we are in %s", got, self)
	}
	if _, err := l.Start(Process{Name: "nowhere", NetNS: "mk-" + l.Name + "-node-9", Args: []string{"true"}}); err == nil {
		t.Error("Start in a missing namespace succeeded")
	}

	stray := Command(context.Background(), n2.NetNS, "sleep", "1000")
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	go stray.Wait()
	waitInNetNS(t, stray.Process.Pid, n2.NetNS)
	strayStart, _, _ := procStat(stray.Process.Pid)

	podNS, err := network.NewNetNS(filepath.Join(n1.RunDir, "netns"), "pod")
	if err != nil {
		t.Fatal(err)
	}

	// Destroy leaves nothing.
	if err := Destroy(l.Name); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	for what, p := range map[string][2]uint64{
		"sleeper":       {uint64(pid), sleeperStart},
		"in-host-netns": {uint64(hostPID), hostStart},
		"stray":         {uint64(stray.Process.Pid), strayStart},
	} {
		if alive(int(p[0]), p[1]) {
			t.Errorf("%s (PID %d) survived Destroy", what, p[0])
		}
	}
	checkGone(t, l.Name)
	if _, err := os.Stat(podNS); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod namespace %s left: %v", podNS, err)
	}
	if err := Destroy(l.Name); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
}

func TestCreateRefusesExistingLab(t *testing.T) {
	l := testLab(t, 1)
	_, err := Create(Spec{Name: l.Name, Nodes: 1})
	if err == nil || !strings.Contains(err.Error(), "destroy") {
		t.Fatalf("second Create: err = %v, want one telling to destroy the lab", err)
	}
	if _, err := os.Stat(NetNSPath(l.Nodes[0].NetNS)); err != nil {
		t.Errorf("failed second Create damaged the first lab: %v", err)
	}
}

// TestExitedSaysWhy: a running process has not exited; one that died is reported with the
// end of its log, as minilab up reports a daemon that stopped before it became healthy.
func TestExitedSaysWhy(t *testing.T) {
	l := testLab(t, 1)
	if _, err := l.Start(Process{Name: "runner", NetNS: l.Nodes[0].NetNS, Args: []string{"sleep", "1000"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start(Process{Name: "crasher", NetNS: l.Nodes[0].NetNS,
		Args: []string{"sh", "-c", "echo 'unknown flag: --bogus' >&2; exit 2"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Exited("runner"); err != nil {
		t.Errorf("Exited(runner) = %v, want nil while it runs", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	err := l.Exited("crasher")
	for err == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		err = l.Exited("crasher")
	}
	if err == nil || !strings.Contains(err.Error(), "crasher") || !strings.Contains(err.Error(), "unknown flag: --bogus") {
		t.Errorf("Exited(crasher) = %v, want it named with its log's end", err)
	}
	if err := l.Exited("nobody"); err == nil || !strings.Contains(err.Error(), `no process "nobody"`) {
		t.Errorf("Exited(nobody) = %v", err)
	}
}

// TestDestroyAfterCrash loses lab.json, as a crash mid-way could, and still cleans up.
func TestDestroyAfterCrash(t *testing.T) {
	l := testLab(t, 1)
	// Destroy at once, before nsenter may even have entered the namespace.
	pid, err := l.Start(Process{Name: "sleeper", NetNS: l.Nodes[0].NetNS, Args: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	start := l.Processes[0].StartTime
	if err := os.WriteFile(labFile(l.Name), []byte("{corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = Destroy(l.Name)
	if err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("Destroy with corrupt lab.json: err = %v, want it reported", err)
	}
	if alive(pid, start) {
		t.Errorf("unrecorded process %d survived Destroy", pid)
	}
	checkGone(t, l.Name)
}

func TestSweep(t *testing.T) {
	dead := testLab(t, 1)
	live := testLab(t, 1)
	pid, err := dead.Start(Process{Name: "short", NetNS: dead.Nodes[0].NetNS, Args: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := live.Start(Process{Name: "long", NetNS: live.Nodes[0].NetNS, Args: []string{"sleep", "1000"}}); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	start := dead.Processes[0].StartTime
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid, start) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}

	swept, err := Sweep()
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if !strings.Contains(fmt.Sprint(swept), dead.Name) || strings.Contains(fmt.Sprint(swept), live.Name) {
		t.Errorf("Sweep removed %v; want %s and not %s", swept, dead.Name, live.Name)
	}
	checkGone(t, dead.Name)
	if _, err := Load(live.Name); err != nil {
		t.Errorf("live lab damaged: %v", err)
	}
}

func inNS(t *testing.T, name string, fn func() error) {
	t.Helper()
	if err := network.InNetNS(NetNSPath(name), fn); err != nil {
		t.Fatalf("in %s: %v", name, err)
	}
}

func linkNames(t *testing.T) []string {
	t.Helper()
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	return names
}

// waitInNetNS waits until pid runs in the lab namespace name: nsenter switches, then execs.
func waitInNetNS(t *testing.T, pid int, name string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(NetNSPath(name), &st); err != nil {
		t.Fatal(err)
	}
	nsLink := fmt.Sprintf("/proc/%d/ns/net", pid)
	if want := fmt.Sprintf("net:[%d]", st.Ino); !waitLink(nsLink, want) {
		got, err := os.Readlink(nsLink)
		t.Fatalf("PID %d is in %s (err %v), want %s (%s)", pid, got, err, name, want)
	}
}

// waitLink waits up to 5s for the symlink at path to point to want.
func waitLink(path, want string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if got, err := os.Readlink(path); err == nil && got == want {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkGone asserts that nothing of lab name is left on the host.
func checkGone(t *testing.T, name string) {
	t.Helper()
	if left, err := labNetNS(name); err != nil || len(left) > 0 {
		t.Errorf("namespaces left: %v (err %v)", left, err)
	}
	l := describe(Spec{Name: name})
	for _, dir := range []string{l.StateDir, l.RunDir} {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left: %v", dir, err)
		}
	}
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) {
		return !strings.Contains(m.Mountpoint, "/"+name) && !strings.Contains(m.Mountpoint, "mk-"+name+"-"), false
	})
	if err != nil || len(mounts) > 0 {
		t.Errorf("mounts left: %v (err %v)", mounts, err)
	}
}

// routesInto lists the host namespace's IPv4 routes into (or around) these ranges.
func routesInto(t *testing.T, cidrs ...string) []string {
	t.Helper()
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var into []string
	for _, r := range routes {
		for _, cidr := range cidrs {
			_, lab, _ := net.ParseCIDR(cidr)
			if r.Dst != nil && !r.Dst.IP.IsUnspecified() && (lab.Contains(r.Dst.IP) || r.Dst.Contains(lab.IP)) {
				into = append(into, r.String())
			}
		}
	}
	return into
}

// TestLabSegments: nodes on two switches reach each other only through the router.
func TestLabSegments(t *testing.T) {
	hostLinksBefore := linkNames(t)
	hostRoutesBefore := routesInto(t, "10.200.0.0/16", ClusterCIDR)
	l := testLabSpec(t, Spec{Nodes: 3, Segments: 2})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n1, n2, n3 := l.Nodes[0], l.Nodes[1], l.Nodes[2]
	if n1.IP != "10.200.0.11" || n2.IP != "10.200.1.12" || n3.IP != "10.200.0.13" || n2.Segment != 1 {
		t.Errorf("addressing: %+v", l.Nodes)
	}
	if l.Router == nil || len(l.Switches) != 2 || l.Switches[1] != "mk-"+l.Name+"-sw1" {
		t.Fatalf("router %+v, switches %v", l.Router, l.Switches)
	}
	inNS(t, n1.NetNS, func() error {
		routes, err := netlink.RouteGet(net.ParseIP(n2.IP))
		if err != nil {
			return err
		}
		if len(routes) != 1 || !routes[0].Gw.Equal(net.ParseIP("10.200.0.1")) {
			t.Errorf("node-1 reaches node-2 via %v, want the router 10.200.0.1", routes)
		}
		return nil
	})
	for _, hop := range []struct{ from, to string }{{n1.NetNS, n2.IP}, {n2.NetNS, n3.IP}, {l.ControlPlane.NetNS, n2.IP}} {
		if out, err := Command(ctx, hop.from, "busybox", "ping", "-c", "1", "-W", "2", hop.to).CombinedOutput(); err != nil {
			t.Errorf("ping %s from %s: %v\n%s", hop.to, hop.from, err, out)
		}
	}
	// The control plane reaches node-2's pods through the router, which routes them on.
	for _, hop := range []struct{ netns, via string }{{l.ControlPlane.NetNS, "10.200.0.1"}, {l.Router.NetNS, n2.IP}} {
		inNS(t, hop.netns, func() error {
			routes, err := netlink.RouteGet(net.ParseIP("10.244.2.5"))
			if err != nil || len(routes) != 1 || !routes[0].Gw.Equal(net.ParseIP(hop.via)) {
				t.Errorf("%s routes node-2's pods via %v (%v), want %s", hop.netns, routes, err, hop.via)
			}
			return nil
		})
	}
	inNS(t, l.Router.NetNS, func() error {
		routes, err := netlink.RouteList(nil, netlink.FAMILY_ALL)
		for _, r := range routes {
			if r.Dst == nil || r.Dst.IP.IsUnspecified() {
				t.Errorf("the router has a default route: %v", r)
			}
		}
		return err
	})
	if after := linkNames(t); fmt.Sprint(after) != fmt.Sprint(hostLinksBefore) {
		t.Errorf("host links changed: %v → %v", hostLinksBefore, after)
	}
	if after := routesInto(t, "10.200.0.0/16", ClusterCIDR); fmt.Sprint(after) != fmt.Sprint(hostRoutesBefore) {
		t.Errorf("the lab changed the host's routes: %v → %v", hostRoutesBefore, after)
	}
	if err := Destroy(l.Name); err != nil {
		t.Fatal(err)
	}
	if left, _ := labNetNS(l.Name); len(left) > 0 {
		t.Errorf("namespaces left: %v", left)
	}
}

// TestAliveUntilOnlyTheZombieIsLeft: a running process is alive; once it has exited and
// only its zombie waits for the parent (its one thread gone), it is not.
func TestAliveUntilOnlyTheZombieIsLeft(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	start, _, err := procStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if !alive(cmd.Process.Pid, start) {
		t.Fatal("a running process is not alive")
	}
	cmd.Process.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for alive(cmd.Process.Pid, start) {
		if time.Now().After(deadline) {
			t.Fatal("a killed process's zombie is still alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, state, err := procStat(cmd.Process.Pid); err != nil || state != 'Z' {
		t.Errorf("state %c, %v: want the zombie still there (not yet waited for)", state, err)
	}
}
