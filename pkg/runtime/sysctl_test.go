package runtime_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// TestSandboxSysctls: the sandbox's sysctls are set in its own IPC and network
// namespaces, which its containers share, and not on the host.
func TestSandboxSysctls(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	netns := newNetNS(t)
	sandbox, err := e.rt.RunSandbox(ctx, runtime.SandboxConfig{PodUID: randomHex(16), PodName: "sysctls", NetNSPath: netns.path,
		Sysctls: map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.ip_local_port_range": "20000 30000"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.rt.StopContainer(ctx, sandbox.ID, 0); e.rt.RemoveContainer(ctx, sandbox.ID) })
	read := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("nsenter", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("nsenter %v: %v: %s", args, err, out)
		}
		return strings.Join(strings.Fields(string(out)), " ")
	}
	pid := fmt.Sprint(sandbox.PID)
	if got := read("-t", pid, "-i", "cat", "/proc/sys/kernel/shm_rmid_forced"); got != "1" {
		t.Errorf("kernel.shm_rmid_forced in the sandbox: %q, want 1", got)
	}
	if got := read("-t", pid, "-n", "cat", "/proc/sys/net/ipv4/ip_local_port_range"); got != "20000 30000" {
		t.Errorf("net.ipv4.ip_local_port_range in the sandbox: %q, want 20000 30000", got)
	}
	if own, _ := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); strings.Join(strings.Fields(string(own)), " ") == "20000 30000" {
		t.Error("the test's own net.ipv4.ip_local_port_range changed")
	}
}

// TestSandboxUnprivilegedPortsAndICMP: as containerd's CRI plugin with its defaults
// (enable_unprivileged_ports, enable_unprivileged_icmp), a sandbox in a network namespace
// of its own lets every user bind low ports and ping, unless the pod sets those sysctls;
// a hostNetwork sandbox leaves the node's namespace alone.
func TestSandboxUnprivilegedPortsAndICMP(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	run := func(cfg runtime.SandboxConfig) string {
		t.Helper()
		cfg.PodUID, cfg.PodName = randomHex(16), "unpriv"
		sandbox, err := e.rt.RunSandbox(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.rt.StopContainer(ctx, sandbox.ID, 0); e.rt.RemoveContainer(ctx, sandbox.ID) })
		out, err := exec.Command("nsenter", "-t", fmt.Sprint(sandbox.PID), "-n", "cat",
			"/proc/sys/net/ipv4/ip_unprivileged_port_start", "/proc/sys/net/ipv4/ping_group_range").CombinedOutput()
		if err != nil {
			t.Fatalf("nsenter: %v: %s", err, out)
		}
		return strings.Join(strings.Fields(string(out)), " ")
	}
	if got, want := run(runtime.SandboxConfig{NetNSPath: newNetNS(t).path}), "0 0 2147483647"; got != want {
		t.Errorf("pod network: ip_unprivileged_port_start, ping_group_range = %q, want %q", got, want)
	}
	if got, want := run(runtime.SandboxConfig{NetNSPath: newNetNS(t).path, Sysctls: map[string]string{
		"net.ipv4.ip_unprivileged_port_start": "80", "net.ipv4.ping_group_range": "1 1"}}), "80 1 1"; got != want {
		t.Errorf("pod's own sysctls: %q, want %q", got, want)
	}
	// A hostNetwork sandbox, in a namespace standing for the node's, keeps its values.
	node := newNetNS(t)
	before, err := exec.Command("ip", "netns", "exec", node.name, "cat",
		"/proc/sys/net/ipv4/ip_unprivileged_port_start", "/proc/sys/net/ipv4/ping_group_range").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, before)
	}
	if got, want := run(runtime.SandboxConfig{NetNSPath: node.path, HostNetwork: true}), strings.Join(strings.Fields(string(before)), " "); got != want {
		t.Errorf("hostNetwork sandbox: %q, want the node's %q", got, want)
	}
}
