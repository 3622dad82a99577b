package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/agent/podsync"
	"github.com/minik8s/minik8s/pkg/runtime/runtimetest"
)

// shutdownHelperEnv, set, makes the test binary a minilet with these arguments (unit
// separated) that checks for goroutines left once it stopped: TestShutdownLeavesNoGoroutine.
const shutdownHelperEnv = "MINILET_SHUTDOWN_HELPER_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(shutdownHelperEnv); args != "" {
		os.Exit(runShutdownHelper(strings.Split(args, "\x1f")))
	}
	os.Exit(m.Run())
}

// runShutdownHelper runs minilet until SIGTERM, then fails (exit 2) when any goroutine it
// started is still running.
func runShutdownHelper(args []string) int {
	before := goleak.IgnoreCurrent()
	cmd := newCommand()
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "minilet:", err)
		return 1
	}
	err := goleak.Find(before,
		// Process-wide, not minilet's: the signal watcher os/signal starts once, and the idle
		// keep-alive connections of client-go's shared transports.
		goleak.IgnoreAnyFunction("os/signal.loop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
	if err != nil {
		fmt.Println("goroutines left after minilet stopped:", err)
		return 2
	}
	fmt.Println("no goroutine left; goroutines now:", runtime.NumGoroutine())
	return 0
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

	ns := "minilet-shutdown-" + strconv.Itoa(os.Getpid())
	runCmd(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { runCmd(t, "ip", "netns", "del", ns) })
	runCmd(t, "ip", "-n", ns, "link", "set", "lo", "up")

	dir := t.TempDir()
	// nsenter, not ip netns exec: that mounts a sysfs of its own, without the cgroups.
	inNS := "--net=/run/netns/" + ns
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

	// minilet says READY=1 (sd_notify) once registered, with its status and lease loops running.
	notifyPath := filepath.Join(dir, "notify.sock")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()

	root := filepath.Join(dir, "minilet")
	cgroupRoot := "/minik8s-shutdown-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() {
		if err := podsync.RemoveNodeNetNS(root); err != nil {
			t.Error(err)
		}
		if err := cm.RemoveRoot(cgroupRoot); err != nil {
			t.Error(err)
		}
	})
	args := []string{"--kubeconfig", kubeconfig, "--node-name", "shutdown", "--node-ip", "127.0.0.1", "--pod-cidr", "10.244.7.0/24",
		"--containerd", containerd, "--containerd-namespace", "minilet-shutdown", "--root-dir", root, "--cgroup-root", cgroupRoot,
		"--pod-network", "none", "--healthz-port", "10248"}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	minilet := exec.Command("nsenter", inNS, "--", self)
	minilet.Env = append(os.Environ(), shutdownHelperEnv+"="+strings.Join(args, "\x1f"), "NOTIFY_SOCKET="+notifyPath)
	var out bytes.Buffer
	minilet.Stdout, minilet.Stderr = &out, &out
	if err := minilet.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- minilet.Wait() }()

	_ = notify.SetReadDeadline(time.Now().Add(2 * time.Minute))
	ready := make(chan string, 1)
	go func() {
		buf := make([]byte, 256)
		n, err := notify.Read(buf)
		ready <- fmt.Sprintf("%s%v", buf[:n], err)
	}()
	select {
	case msg := <-ready:
		if !strings.Contains(msg, "READY=1") {
			_ = minilet.Process.Kill()
			<-exited
			t.Fatalf("minilet never said READY=1 (%s):\n%s", msg, out.String())
		}
	case err := <-exited:
		t.Fatalf("minilet stopped before it was ready (%v):\n%s", err, out.String())
	}
	// nsenter runs minilet in place of itself (exec), so this signals minilet.
	if err := minilet.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("minilet after SIGTERM: %v\n%s", err, out.String())
		}
	case <-time.After(time.Minute):
		_ = minilet.Process.Kill()
		<-exited
		t.Fatalf("minilet did not stop within a minute of SIGTERM:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "no goroutine left") {
		t.Fatalf("minilet did not check its goroutines:\n%s", out.String())
	}
	t.Log(lastLine(out.String()))
}

func runCmd(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
