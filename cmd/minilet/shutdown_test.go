package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/internal/shutdowntest"
	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/agent/hostnetwork"
	"github.com/minik8s/minik8s/pkg/network/nettest"
	"github.com/minik8s/minik8s/pkg/runtime/runtimetest"
)

func TestMain(m *testing.M) {
	shutdowntest.HelperMain(newCommand)
	os.Exit(m.Run())
}

// TestShutdownLeavesNoGoroutine: SIGTERM to a minilet running against a real miniapi and
// a real containerd returns with every goroutine it started stopped (goleak). Both run in a
// network namespace the test makes, so nothing minilet sets up for the pod network touches
// the host's.
func TestShutdownLeavesNoGoroutine(t *testing.T) {
	testenv.RequireRoot(t, "minilet runs containers and network namespaces")
	testenv.RequireTools(t, "ip", "nsenter")
	bin := os.Getenv("MINIK8S_BIN")
	miniapi := filepath.Join(bin, "miniapi")
	testenv.RequireFile(t, miniapi, "miniapi binary (go build -o bin/ ./cmd/...; MINIK8S_BIN=bin)")
	containerd := runtimetest.StartContainerd(t)

	netnsPath := nettest.Named(t, "minilet-shutdown-"+strconv.Itoa(os.Getpid()))

	dir := t.TempDir()
	// nsenter, not ip netns exec: that mounts a sysfs of its own, without the cgroups.
	inNS := "--net=" + netnsPath
	api := exec.Command("nsenter", inNS, "--", miniapi, "--data-dir", filepath.Join(dir, "miniapi"),
		"--bind-address", "127.0.0.1", "--secure-port", "6443")
	var apiLog bytes.Buffer
	api.Stdout, api.Stderr = &apiLog, &apiLog
	if err := api.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.Process.Signal(syscall.SIGTERM)
		_ = api.Wait()
		if t.Failed() {
			t.Logf("miniapi:\n%s", apiLog.String())
		}
	})
	kubeconfig := filepath.Join(dir, "miniapi", "admin.kubeconfig")
	waitUntil(t, "miniapi's admin kubeconfig", func() bool { _, err := os.Stat(kubeconfig); return err == nil })

	root := filepath.Join(dir, "minilet")
	cgroupRoot := "/minik8s-shutdown-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() {
		if err := hostnetwork.Remove(root); err != nil {
			t.Error(err)
		}
		if err := cm.RemoveRoot(cgroupRoot); err != nil {
			t.Error(err)
		}
	})
	args := []string{"--kubeconfig", kubeconfig, "--node-name", "shutdown", "--node-ip", "127.0.0.1", "--pod-cidr", "10.244.7.0/24",
		"--containerd", containerd, "--containerd-namespace", "minilet-shutdown", "--root-dir", root, "--cgroup-root", cgroupRoot,
		"--pod-network", "none", "--healthz-port", "10248"}
	// minilet says READY=1 (sd_notify) once registered, with its status and lease loops
	// running. nsenter runs it in place of itself (exec), so SIGTERM reaches minilet.
	shutdowntest.Start(t, []string{"nsenter", inNS, "--"}, args).StopAndCheck(t)
}

// waitUntil polls cond until it holds, failing t after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	controllertest.Until(t, what, time.Minute, cond)
}
