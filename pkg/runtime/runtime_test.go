package runtime_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/internal/testenv"

	"github.com/containerd/cgroups/v3"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/minik8s/minik8s/images"
	"github.com/minik8s/minik8s/pkg/crilog"
	"github.com/minik8s/minik8s/pkg/network/nettest"
	"github.com/minik8s/minik8s/pkg/runtime"
	"github.com/minik8s/minik8s/pkg/runtime/pauseimage"
	"github.com/minik8s/minik8s/pkg/runtime/runtimetest"
)

func TestNewFailsFastWhenContainerdIsMissing(t *testing.T) {
	dir := t.TempDir()
	// A socket file left behind by a containerd that died: nobody listens on it.
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()

	for _, address := range []string{filepath.Join(dir, "missing.sock"), stale} {
		start := time.Now()
		rt, err := runtime.New(context.Background(), address, "minilet")
		if err == nil {
			rt.Close()
			t.Fatalf("New(%s) succeeded without a containerd", address)
		}
		if !strings.Contains(err.Error(), address) {
			t.Errorf("error %q does not name the address %s", err, address)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("New(%s) took %s to fail; want a fast failure", address, took)
		}
	}
}

// env is a private containerd with the project's images imported into a namespace.
type env struct {
	rt      *runtime.Runtime
	client  *containerd.Client // the raw client, to check what is left in containerd
	address string
	ns      string
	imgDir  string
	logsDir string
}

// setup starts containerd and imports the pause and netexec images.
func setup(t *testing.T) *env {
	e := newEnv(t)
	for _, ref := range []string{images.PauseRef, images.NetexecRef} {
		e.importImage(t, ref)
	}
	return e
}

// newEnv starts containerd, with no image imported yet.
func newEnv(t *testing.T) *env {
	runtimetest.RequireRoot(t, "ip", "busybox")
	address := runtimetest.StartContainerd(t)
	ctx := context.Background()
	e := &env{address: address, ns: "test-" + randomHex(4), imgDir: runtimetest.ImageDir(t), logsDir: t.TempDir()}
	var err error
	e.rt, err = runtime.New(ctx, address, e.ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.rt.Close() })
	e.client, err = containerd.New(address, containerd.WithDefaultNamespace(e.ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.client.Close() })
	return e
}

func (e *env) importImage(t *testing.T, ref string) {
	t.Helper()
	f, err := os.Open(filepath.Join(e.imgDir, images.Tarballs[ref]))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, err := e.rt.ImportImage(context.Background(), f)
	if err != nil {
		t.Fatalf("importing %s: %v", ref, err)
	}
	if len(names) != 1 || names[0] != ref {
		t.Fatalf("importing %s gave images %v", ref, names)
	}
}

func TestImages(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	for _, ref := range []string{images.PauseRef, images.NetexecRef} {
		if ok, err := e.rt.HasImage(ctx, ref); err != nil || !ok {
			t.Errorf("HasImage(%s) = %v, %v after import", ref, ok, err)
		}
	}
	if ok, err := e.rt.HasImage(ctx, images.BusyboxRef); err != nil || ok {
		t.Errorf("HasImage(%s) = %v, %v before import", images.BusyboxRef, ok, err)
	}

	opened := 0
	open := func() (io.ReadCloser, error) {
		opened++
		return os.Open(filepath.Join(e.imgDir, images.Tarballs[images.BusyboxRef]))
	}
	for range 2 {
		if err := e.rt.EnsureImage(ctx, images.BusyboxRef, open); err != nil {
			t.Fatal(err)
		}
	}
	if opened != 1 {
		t.Errorf("EnsureImage opened the tarball %d times; want once (only while missing)", opened)
	}
	img, err := e.client.GetImage(ctx, images.BusyboxRef)
	if err != nil {
		t.Fatal(err)
	}
	if unpacked, err := img.IsUnpacked(ctx, ""); err != nil || !unpacked {
		t.Errorf("%s unpacked = %v, %v; ImportImage must unpack", images.BusyboxRef, unpacked, err)
	}

	wrong := func() (io.ReadCloser, error) {
		return os.Open(filepath.Join(e.imgDir, images.Tarballs[images.NetexecRef]))
	}
	if err := e.rt.EnsureImage(ctx, "localhost/minik8s/missing:v1", wrong); err == nil {
		t.Error("EnsureImage accepted a tarball that does not hold the image")
	}
}

func TestPodLifecycle(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	netns := newNetNS(t)
	podUID := "5f0c2a7e-" + randomHex(4) + "-4d1e-9b3a-" + randomHex(6)

	sandbox, err := e.rt.RunSandbox(ctx, runtime.SandboxConfig{
		PodUID: podUID, PodNamespace: "default", PodName: "web", Hostname: "web-host",
		NetNSPath: netns.path, Labels: map[string]string{"app": "web"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sandbox.Sandbox || sandbox.State != runtime.StateRunning || sandbox.PID == 0 || sandbox.StartedAt.IsZero() {
		t.Fatalf("sandbox = %+v; want a running sandbox with a PID and start time", sandbox)
	}
	if !nettest.SameNamespace(t, fmt.Sprintf("/proc/%d/ns/net", sandbox.PID), netns.path) {
		t.Errorf("pause is not in the pod network namespace %s", netns.path)
	}
	// The pod's address, recorded after its network set-up, is in the sandbox's status.
	if err := e.rt.SetSandboxIP(ctx, sandbox.ID, net.ParseIP("10.244.1.7")); err != nil {
		t.Fatal(err)
	}
	if got := status(t, e, sandbox.ID).PodIP; got != "10.244.1.7" {
		t.Errorf("sandbox address %q, want the recorded 10.244.1.7", got)
	}

	logPath := filepath.Join(e.logsDir, podUID, "server", "0.log")
	server, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{
		PodUID: podUID, Name: "server", Image: images.NetexecRef,
		Args:      []string{"--http-port=8080", "--udp-port=0"},
		SandboxID: sandbox.ID, LogPath: logPath, SpecHash: "hash-1", RestartCount: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	if server.State != runtime.StateCreated || server.Sandbox || server.SandboxID != sandbox.ID || server.RestartCount != 2 {
		t.Fatalf("created container = %+v", server)
	}
	if err := e.rt.StartContainer(ctx, server.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.rt.StartContainer(ctx, server.ID); err == nil {
		t.Error("starting a running container again succeeded")
	}
	server = status(t, e, server.ID)
	if server.State != runtime.StateRunning || server.PID == 0 {
		t.Fatalf("started container = %+v", server)
	}
	for _, ns := range []string{"net", "ipc", "uts"} {
		if !nettest.SameNamespace(t, fmt.Sprintf("/proc/%d/ns/%s", server.PID, ns), fmt.Sprintf("/proc/%d/ns/%s", sandbox.PID, ns)) {
			t.Errorf("container does not share the sandbox's %s namespace", ns)
		}
	}
	if nettest.SameNamespace(t, fmt.Sprintf("/proc/%d/ns/pid", server.PID), fmt.Sprintf("/proc/%d/ns/pid", sandbox.PID)) {
		t.Error("container shares the sandbox's PID namespace; pods do not by default")
	}

	if got := netns.get(t, "http://127.0.0.1:8080/hostname"); got != "web-host" {
		t.Errorf("/hostname inside the pod = %q, want the pod host name web-host", got)
	}
	if got := netns.get(t, "http://127.0.0.1:8080/echo?msg=hello"); got != "hello" {
		t.Errorf("/echo = %q, want hello", got)
	}
	// The shim copies the container's output to the log on its own time: the line may
	// land a moment after the response.
	var logs []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		logs, err = os.ReadFile(logPath)
		if err == nil && strings.Contains(string(logs), "/echo?msg=hello") || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || !strings.Contains(string(logs), "/echo?msg=hello") {
		t.Errorf("container log %s = %q, %v; want the server's request lines", logPath, logs, err)
	}

	list, err := e.rt.ListContainers(ctx, podUID)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]runtime.Container{}
	for _, c := range list {
		byName[c.Name] = c
	}
	if len(list) != 2 || !byName["sandbox"].Sandbox || byName["server"].SpecHash != "hash-1" ||
		byName["server"].PodName != "web" || byName["server"].PodNamespace != "default" ||
		byName["server"].Image != images.NetexecRef {
		t.Errorf("ListContainers(%s) = %+v", podUID, list)
	}
	if other, err := e.rt.ListContainers(ctx, "some-other-pod"); err != nil || len(other) != 0 {
		t.Errorf("ListContainers(other pod) = %v, %v; want none", other, err)
	}

	// An exit the container chooses itself is reported with its code. One request, not
	// get's retries: once the server has exited, a retry finds the port closed.
	exitCtx, cancelExit := context.WithTimeout(ctx, 5*time.Second)
	if out, err := exec.CommandContext(exitCtx, "ip", "netns", "exec", netns.name, "busybox", "wget", "-qO-", "http://127.0.0.1:8080/exit?code=3").CombinedOutput(); err != nil {
		t.Logf("GET /exit?code=3: %v: %s (the exit may still have been asked for)", err, out)
	}
	cancelExit()
	server = waitState(t, e, server.ID, runtime.StateExited)
	if server.ExitCode != 3 || server.FinishedAt.Before(server.StartedAt) || server.PID != 0 {
		t.Errorf("after /exit?code=3: %+v", server)
	}
	if err := e.rt.StopContainer(ctx, server.ID, time.Second); err != nil {
		t.Errorf("stopping an exited container: %v", err)
	}

	if v, err := e.rt.Version(ctx); err != nil || !strings.HasPrefix(v, "1.") && !strings.HasPrefix(v, "2.") {
		t.Errorf("Version() = %q, %v", v, err)
	}

	// A restarted minilet (a new connection) sees the same pod.
	restarted, err := runtime.New(ctx, e.address, e.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	again, err := restarted.ContainerStatus(ctx, server.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, server) {
		t.Errorf("after reconnecting: %+v\nbefore: %+v", again, server)
	}

	if err := e.rt.StopContainer(ctx, sandbox.ID, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if sandbox = status(t, e, sandbox.ID); sandbox.State != runtime.StateExited || sandbox.ExitCode != 0 {
		t.Errorf("stopped sandbox = %+v; want exited with 0 (pause exits 0 on SIGTERM)", sandbox)
	}

	for _, id := range []string{server.ID, sandbox.ID, server.ID} { // the second removal is a no-op
		if err := e.rt.RemoveContainer(ctx, id); err != nil {
			t.Fatalf("removing %s: %v", id, err)
		}
	}
	e.expectNothingLeft(t, server.ID, sandbox.ID)
}

func TestCommandEnvAndStop(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.importImage(t, images.BusyboxRef)
	sandbox, podUID := e.runSandbox(ctx, t, "jobs")

	run := func(name, image string, command, args, env []string) runtime.Container {
		t.Helper()
		c, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{
			Name: name, Image: image, Command: command, Args: args, Env: env,
			SandboxID: sandbox.ID, LogPath: filepath.Join(e.logsDir, podUID, name+".log"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.rt.StartContainer(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		return c
	}

	// A command that is not in the image: the start fails and the container stays,
	// exited with 128 and the error, as containerd's CRI reports a StartError.
	missing, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{
		Name: "missing", Image: images.BusyboxRef, Command: []string{"no-such-command"},
		SandboxID: sandbox.ID, LogPath: filepath.Join(e.logsDir, podUID, "missing.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.rt.StartContainer(ctx, missing.ID); err == nil || !strings.Contains(err.Error(), "failed to create containerd task") {
		t.Errorf("starting a missing command: %v", err)
	}
	if got := status(t, e, missing.ID); got.State != runtime.StateExited || got.ExitCode != 128 || !strings.Contains(got.StartError, "no-such-command") || got.FinishedAt.IsZero() {
		t.Errorf("after a failed start: state %s, exit %d, start error %q, finished %s", got.State, got.ExitCode, got.StartError, got.FinishedAt)
	}

	// Command replaces the image's Cmd; env reaches the process; output goes to the log.
	echo := run("echo", images.BusyboxRef, []string{"sh", "-c"}, []string{`echo "greeting=$GREETING host=$(hostname)"; exit 7`}, []string{"GREETING=hi"})
	echo = waitState(t, e, echo.ID, runtime.StateExited)
	if echo.ExitCode != 7 {
		t.Errorf("exit code = %d, want 7", echo.ExitCode)
	}
	if !strings.HasPrefix(echo.ImageRef, "localhost/minik8s/busybox@sha256:") {
		t.Errorf("image ref %q, want CRI's repository@digest", echo.ImageRef)
	}
	if logs, _ := os.ReadFile(echo.LogPath); !strings.Contains(string(logs), "greeting=hi host=jobs") {
		t.Errorf("log = %q, want the greeting and the pod host name", logs)
	}

	// $HOSTNAME is the pod's unless the container sets its own, as containerd's CRI sets it.
	for _, tc := range []struct{ env, want string }{{"", "HOSTNAME=jobs"}, {"HOSTNAME=mine", "HOSTNAME=mine"}} {
		cfg := runtime.ContainerConfig{Name: "env" + tc.env[:min(len(tc.env), 1)], Image: images.BusyboxRef, Command: []string{"env"}, Hostname: "jobs",
			SandboxID: sandbox.ID, LogPath: filepath.Join(e.logsDir, podUID, "env"+tc.env+".log")}
		if tc.env != "" {
			cfg.Env = []string{tc.env}
		}
		c, err := e.rt.CreateContainer(ctx, cfg)
		if err == nil {
			err = e.rt.StartContainer(ctx, c.ID)
		}
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, e, c.ID, runtime.StateExited)
		if logs, _ := os.ReadFile(cfg.LogPath); strings.Count(string(logs), "HOSTNAME=") != 1 || !strings.Contains(string(logs), tc.want) {
			t.Errorf("env with %q: %q, want one %s", tc.env, logs, tc.want)
		}
		if err := e.rt.RemoveContainer(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
	}

	// The netexec image carries the busybox tools tests run inside pods.
	tools := run("tools", images.NetexecRef, []string{"sh", "-c", "for t in wget nc ls cat sleep; do command -v $t || exit 1; done"}, nil, nil)
	if tools = waitState(t, e, tools.ID, runtime.StateExited); tools.ExitCode != 0 {
		logs, _ := os.ReadFile(tools.LogPath)
		t.Errorf("tools missing from %s: exit %d, output %q", images.NetexecRef, tools.ExitCode, logs)
	}

	// A process that handles SIGTERM stops within the grace period with its own code.
	polite := run("polite", images.BusyboxRef, []string{"sh", "-c", "trap 'exit 42' TERM; while true; do sleep 0.2; done"}, nil, nil)
	// A PID 1 without a SIGTERM handler ignores it, so only SIGKILL ends it.
	stubborn := run("stubborn", images.BusyboxRef, []string{"sleep", "1000"}, nil, nil)
	waitState(t, e, polite.ID, runtime.StateRunning)
	time.Sleep(300 * time.Millisecond) // let sh install its trap

	start := time.Now()
	if err := e.rt.StopContainer(ctx, polite.ID, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stopping a container that handles SIGTERM took %s", took)
	}
	if polite = status(t, e, polite.ID); polite.State != runtime.StateExited || polite.ExitCode != 42 {
		t.Errorf("polite container after stop = %+v, want exited with 42", polite)
	}

	start = time.Now()
	if err := e.rt.StopContainer(ctx, stubborn.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("stubborn container was stopped after %s, before its grace period", took)
	}
	if stubborn = status(t, e, stubborn.ID); stubborn.State != runtime.StateExited || stubborn.ExitCode != 128+int32(syscall.SIGKILL) {
		t.Errorf("stubborn container after stop = %+v, want exited with 137", stubborn)
	}

	// Removing a pod with everything still running kills it all.
	ids := []string{missing.ID, echo.ID, tools.ID, polite.ID, stubborn.ID, sandbox.ID}
	for _, id := range ids {
		if err := e.rt.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	e.expectNothingLeft(t, ids...)
}

// TestHostNetworkSandbox: a hostNetwork pod joins the node's network namespace by its
// path (here a namespace the test made, standing in for the one minilet binds), never the
// runtime's own; so do its containers. Its hostname is the one given, or the host's with
// HostUTS. A sandbox without a namespace path is refused.
func TestHostNetworkSandbox(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	node := newNetNS(t)
	podUID := randomHex(16)
	sandbox, err := e.rt.RunSandbox(ctx, runtime.SandboxConfig{PodUID: podUID, PodName: "host-pod", Hostname: "node-1", NetNSPath: node.path, HostNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.rt.RemoveContainer(ctx, sandbox.ID) })
	if !sandbox.HostNetwork || sandbox.NetNSPath != node.path {
		t.Errorf("sandbox = %+v; want HostNetwork in %s", sandbox, node.path)
	}
	pauseNS := func(ns string) string { return fmt.Sprintf("/proc/%d/ns/%s", sandbox.PID, ns) }
	if !nettest.SameNamespace(t, pauseNS("net"), node.path) {
		t.Error("host-network sandbox is not in the node's network namespace")
	}
	for _, ns := range []string{"net", "uts", "ipc"} {
		if nettest.SameNamespace(t, pauseNS(ns), "/proc/self/ns/"+ns) {
			t.Errorf("host-network sandbox shares the runtime's %s namespace", ns)
		}
	}

	app, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{
		PodUID: podUID, Name: "server", Image: images.NetexecRef, Args: []string{"--http-port=18080", "--udp-port=0"},
		SandboxID: sandbox.ID, LogPath: filepath.Join(e.logsDir, podUID, "server.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.rt.RemoveContainer(ctx, app.ID) })
	if err := e.rt.StartContainer(ctx, app.ID); err != nil {
		t.Fatal(err)
	}
	app = status(t, e, app.ID)
	if !app.HostNetwork || !nettest.SameNamespace(t, fmt.Sprintf("/proc/%d/ns/net", app.PID), node.path) {
		t.Errorf("container %+v is not in the node's network namespace", app)
	}
	if got := node.get(t, "http://127.0.0.1:18080/hostname"); got != "node-1" {
		t.Errorf("hostname in the pod = %q, want node-1", got)
	}

	hostUTS, err := e.rt.RunSandbox(ctx, runtime.SandboxConfig{PodUID: randomHex(16), PodName: "on-host", NetNSPath: node.path, HostNetwork: true, HostUTS: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.rt.RemoveContainer(ctx, hostUTS.ID) })
	if !nettest.SameNamespace(t, fmt.Sprintf("/proc/%d/ns/uts", hostUTS.PID), "/proc/self/ns/uts") {
		t.Error("HostUTS sandbox is not in the host's UTS namespace")
	}

	if sb, err := e.rt.RunSandbox(ctx, runtime.SandboxConfig{PodUID: randomHex(16), PodName: "nowhere", HostNetwork: true}); err == nil {
		e.rt.RemoveContainer(ctx, sb.ID)
		t.Error("RunSandbox without a network namespace path succeeded")
	}
}

func TestSandboxImportsTheEmbeddedPauseImage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	netns := newNetNS(t)
	sandbox, err := e.rt.RunSandbox(ctx, runtime.SandboxConfig{PodUID: randomHex(16), PodName: "p", NetNSPath: netns.path})
	if f, embedErr := pauseimage.Open(); embedErr != nil {
		if err == nil || !strings.Contains(err.Error(), "make build") {
			t.Fatalf("RunSandbox without pause image or embedded copy: %v; want an error telling to run make build", err)
		}
		testenv.Missing(t, "no embedded pause image in this build (make build embeds it); checked the error only")
	} else {
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.rt.RemoveContainer(ctx, sandbox.ID) })
	if ok, err := e.rt.HasImage(ctx, pauseimage.Ref); err != nil || !ok || sandbox.State != runtime.StateRunning {
		t.Errorf("after RunSandbox: image present %v (%v), sandbox %+v", ok, err, sandbox)
	}
}

func TestCreateContainerErrors(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	netns := newNetNS(t)
	sandbox, err := e.rt.RunSandbox(ctx, runtime.SandboxConfig{PodUID: "pod-a", PodName: "a", NetNSPath: netns.path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.rt.RemoveContainer(ctx, sandbox.ID) })
	for name, cfg := range map[string]runtime.ContainerConfig{
		"missing image":   {Name: "c", Image: "localhost/minik8s/absent:v1", SandboxID: sandbox.ID},
		"missing sandbox": {Name: "c", Image: images.NetexecRef, SandboxID: "no-such-sandbox"},
		"other pod":       {Name: "c", Image: images.NetexecRef, SandboxID: sandbox.ID, PodUID: "pod-b"},
		"no name":         {Image: images.NetexecRef, SandboxID: sandbox.ID},
	} {
		if c, err := e.rt.CreateContainer(ctx, cfg); err == nil {
			t.Errorf("%s: CreateContainer succeeded: %+v", name, c)
		}
	}
	list, err := e.rt.ListContainers(ctx, "")
	if err != nil || len(list) != 1 {
		t.Errorf("after failed creations: %v, %v; want only the sandbox", list, err)
	}
}

// expectNothingLeft checks that containerd holds no container, task or container
// snapshot any more (image layers stay).
func (e *env) expectNothingLeft(t *testing.T, ids ...string) {
	t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), e.ns)
	if list, err := e.client.Containers(ctx); err != nil || len(list) != 0 {
		t.Errorf("containers left: %d (%v)", len(list), err)
	}
	tasks, err := e.client.TaskService().List(ctx, nil)
	if err != nil || len(tasks.GetTasks()) != 0 {
		t.Errorf("tasks left: %v (%v)", tasks.GetTasks(), err)
	}
	err = e.client.SnapshotService("").Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindActive {
			t.Errorf("active snapshot left: %s", info.Name)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	for _, id := range ids {
		if _, err := e.rt.ContainerStatus(ctx, id); err == nil {
			t.Errorf("container %s still has a status after removal", id)
		}
	}
}

func status(t *testing.T, e *env, id string) runtime.Container {
	t.Helper()
	c, err := e.rt.ContainerStatus(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func waitState(t *testing.T, e *env, id string, want runtime.State) runtime.Container {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c := status(t, e, id)
		if c.State == want {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s is %s after 15s, want %s: %+v", id, c.State, want, c)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// netNS is a named network namespace the test made, with loopback up.
type netNS struct {
	name, path string
}

// runSandbox starts the sandbox of a pod named name, with a random UID, in a network
// namespace of its own.
func (e *env) runSandbox(ctx context.Context, t *testing.T, name string) (sandbox runtime.Container, podUID string) {
	t.Helper()
	podUID = randomHex(16)
	sandbox, err := e.rt.RunSandbox(ctx, runtime.SandboxConfig{PodUID: podUID, PodName: name, NetNSPath: newNetNS(t).path})
	if err != nil {
		t.Fatal(err)
	}
	return sandbox, podUID
}

func newNetNS(t *testing.T) netNS {
	t.Helper()
	name := "mk-rt-" + randomHex(4)
	return netNS{name: name, path: nettest.Named(t, name)}
}

// get fetches url from inside the namespace, retrying while the server starts. (Debian's
// busybox 1.35 wget crashes on a refused connection when given -T, so the context
// bounds each try instead.)
func (n netNS) get(t *testing.T, url string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", n.name, "busybox", "wget", "-qO-", url).CombinedOutput()
		cancel()
		if err == nil {
			return string(out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s in %s: %v: %s", url, n.name, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

func TestPodNamespacesAndSeccomp(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.importImage(t, images.BusyboxRef)
	hostIPC := runtime.Namespaces{HostIPC: true, SharePID: true}
	sandbox, err := e.rt.RunSandbox(ctx, runtime.SandboxConfig{PodUID: randomHex(16), PodName: "ns", NetNSPath: newNetNS(t).path, Namespaces: hostIPC})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{sandbox.ID}
	t.Cleanup(func() {
		for _, id := range ids {
			e.rt.RemoveContainer(ctx, id)
		}
	})
	run := func(name string, ns runtime.Namespaces, sec runtime.Security) runtime.Container {
		t.Helper()
		c, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{
			Name: name, Image: images.BusyboxRef, Command: []string{"sleep", "1000"},
			SandboxID: sandbox.ID, Namespaces: ns, Security: sec,
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
		if err := e.rt.StartContainer(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		return waitState(t, e, c.ID, runtime.StateRunning)
	}
	nsOf := func(pid uint32, ns string) string { return fmt.Sprintf("/proc/%d/ns/%s", pid, ns) }

	shared := run("shared", hostIPC, runtime.Security{Seccomp: runtime.SeccompRuntimeDefault})
	if !nettest.SameNamespace(t, nsOf(sandbox.PID, "ipc"), "/proc/self/ns/ipc") || !nettest.SameNamespace(t, nsOf(shared.PID, "ipc"), "/proc/self/ns/ipc") {
		t.Error("hostIPC: the sandbox or its container is not in the host's IPC namespace")
	}
	if !nettest.SameNamespace(t, nsOf(shared.PID, "pid"), nsOf(sandbox.PID, "pid")) {
		t.Error("shareProcessNamespace: the container is not in the sandbox's PID namespace")
	}
	if status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", shared.PID)); !strings.Contains(string(status), "Seccomp:\t2") {
		t.Error("RuntimeDefault: the container runs without a seccomp filter")
	}

	own := run("own", runtime.Namespaces{}, runtime.Security{})
	if nettest.SameNamespace(t, nsOf(own.PID, "pid"), nsOf(sandbox.PID, "pid")) || nettest.SameNamespace(t, nsOf(own.PID, "pid"), "/proc/self/ns/pid") {
		t.Error("a container without shared PIDs is not in its own PID namespace")
	}
	if status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", own.PID)); !strings.Contains(string(status), "Seccomp:\t0") {
		t.Error("a container without a seccomp profile is filtered")
	}
	// no_new_privs only with allowPrivilegeEscalation: false, as containerd's CRI plugin
	// sets it (its default spec has it on): setuid programs work in other containers.
	if status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", own.PID)); !strings.Contains(string(status), "NoNewPrivs:\t0") {
		t.Error("a container without allowPrivilegeEscalation: false runs with no_new_privs")
	}
	nnp := run("nnp", runtime.Namespaces{}, runtime.Security{NoNewPrivileges: true})
	if status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", nnp.PID)); !strings.Contains(string(status), "NoNewPrivs:\t1") {
		t.Error("allowPrivilegeEscalation: false: the container runs without no_new_privs")
	}
	// An ephemeral container with a target joins the target's PID namespace.
	debug, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{
		Name: "debug", Image: images.BusyboxRef, Command: []string{"sleep", "1000"}, SandboxID: sandbox.ID, PIDTargetID: own.ID,
	})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, debug.ID)
	if err := e.rt.StartContainer(ctx, debug.ID); err != nil {
		t.Fatal(err)
	}
	debug = waitState(t, e, debug.ID, runtime.StateRunning)
	if !nettest.SameNamespace(t, nsOf(debug.PID, "pid"), nsOf(own.PID, "pid")) || !nettest.SameNamespace(t, nsOf(debug.PID, "net"), nsOf(own.PID, "net")) {
		t.Error("a container targeting another is not in its PID and network namespaces")
	}
	if _, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{Name: "stray", Image: images.BusyboxRef, SandboxID: sandbox.ID, PIDTargetID: sandbox.ID}); err == nil {
		t.Error("a container targeting the sandbox was made")
	}
	host := run("host", runtime.Namespaces{HostPID: true}, runtime.Security{})
	if !nettest.SameNamespace(t, nsOf(host.PID, "pid"), "/proc/self/ns/pid") {
		t.Error("hostPID: the container is not in the host's PID namespace")
	}
	if shims := len(shimsOf(t, e.ns, ids)); shims != 1 {
		t.Errorf("a sandbox and its 5 containers run under %d shims, want one for the pod", shims)
	}

	_, err = e.rt.CreateContainer(ctx, runtime.ContainerConfig{
		Name: "missing-profile", Image: images.BusyboxRef, SandboxID: sandbox.ID,
		Security: runtime.Security{Seccomp: filepath.Join(t.TempDir(), "nope.json")},
	})
	if cfgErr := (*runtime.ConfigError)(nil); err == nil || errors.As(err, &cfgErr) || !strings.Contains(err.Error(), "cannot load seccomp profile") {
		t.Errorf("a missing Localhost seccomp profile: %v, want containerd's CreateContainer error", err)
	}
}

// TestLogsRotateAndOutliveTheRuntime: a container's output lands in a CRI log rotated at
// its size limit; output written while no Runtime copies it is held by the shim and
// copied by the next Runtime that attaches; the log goes with the container.
func TestLogsRotateAndOutliveTheRuntime(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.importImage(t, images.BusyboxRef)
	fifoDir := t.TempDir()
	e.rt.SetLogConfig(runtime.LogConfig{FIFODir: fifoDir, MaxSize: 4096, MaxFiles: 3})
	sandbox, _ := e.runSandbox(ctx, t, "logs")
	signals := t.TempDir()
	logPath := filepath.Join(e.logsDir, "chatty", "0.log")
	script := `i=0; while [ $i -lt 300 ]; do echo "line $i of the first burst"; i=$((i+1)); done; echo before;
		until [ -e /signals/go ]; do sleep 0.1; done; echo during; echo oops >&2;
		until [ -e /signals/go2 ]; do sleep 0.1; done; echo after; sleep 1000`
	c, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{
		Name: "chatty", Image: images.BusyboxRef, Command: []string{"sh", "-c", script}, SandboxID: sandbox.ID, LogPath: logPath,
		Mounts: []runtime.Mount{{HostPath: signals, ContainerPath: "/signals"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.rt.RemoveContainer(ctx, c.ID)
		e.rt.RemoveContainer(ctx, sandbox.ID)
	})
	if err := e.rt.StartContainer(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	logHas := func(what string) bool {
		data, _ := os.ReadFile(logPath)
		return strings.Contains(string(data), what)
	}
	waitUntil(t, "the first burst logged", func() bool { return logHas(" stdout F before\n") })
	rotated, err := crilog.Rotated(logPath)
	if err != nil || len(rotated) != 2 {
		t.Errorf("rotated logs %v (%v), want the 2 newest kept", rotated, err)
	}
	for _, p := range append(rotated, logPath) {
		if fi, err := os.Stat(p); err != nil || fi.Size() > 4096 {
			t.Errorf("log file %s: %v %v, want at most 4096 bytes", p, fi, err)
		}
	}

	// The runtime goes (minilet stops); the container writes on; a new one attaches.
	e.rt.Close()
	os.WriteFile(filepath.Join(signals, "go"), nil, 0o644)
	time.Sleep(500 * time.Millisecond)
	if logHas("during") {
		t.Fatal("output was copied after the runtime closed")
	}
	rt2, err := runtime.New(ctx, e.address, e.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	rt2.SetLogConfig(runtime.LogConfig{FIFODir: fifoDir, MaxSize: 4096, MaxFiles: 3})
	e.rt = rt2 // for the cleanup
	if err := rt2.AttachLogs(ctx); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(signals, "go2"), nil, 0o644)
	waitUntil(t, "the output after the restart logged", func() bool { return logHas(" stdout F after\n") })
	data, _ := os.ReadFile(logPath)
	if !logHas(" stdout F during\n") || !logHas(" stderr F oops\n") || strings.Index(string(data), "during") > strings.Index(string(data), "after") {
		t.Errorf("log after the restart:\n%s\nwant 'during' and 'oops' (held while nobody copied) before 'after'", data)
	}

	// Removed, the container takes its log and the log's rotated files with it, as the
	// kubelet's removeContainerLog.
	if err := rt2.RemoveContainer(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(logPath + "*")
	if len(left) != 0 {
		t.Errorf("log files left after the container was removed: %v", left)
	}
}

// waitUntil polls cond until it holds, failing t after 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	controllertest.Until(t, what, 20*time.Second, cond)
}

// shimsOf lists the shim processes of namespace ns serving any of the containers ids (a
// shim is started with the ID of the first container it serves). Shims of other tests'
// pods, still exiting on a loaded machine, are not listed.
func shimsOf(t *testing.T, ns string, ids []string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), "containerd-shim") || !strings.Contains(string(cmdline), "-namespace\x00"+ns+"\x00") {
			continue
		}
		for _, id := range ids {
			if strings.Contains(string(cmdline), "-id\x00"+id+"\x00") {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// TestContainerSeesItsCgroups: a container reads its own memory limit under
// /sys/fs/cgroup (read-only), as under containerd's CRI.
func TestContainerSeesItsCgroups(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.importImage(t, images.BusyboxRef)
	sandbox, podUID := e.runSandbox(ctx, t, "cgroups")
	ids := []string{sandbox.ID}
	t.Cleanup(func() {
		for _, id := range ids {
			e.rt.RemoveContainer(ctx, id)
		}
	})
	limit := int64(48 << 20)
	file := "/sys/fs/cgroup/memory/memory.limit_in_bytes"
	if cgroups.Mode() == cgroups.Unified {
		file = "/sys/fs/cgroup/memory.max"
	}
	c, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{
		Name: "limited", Image: images.BusyboxRef, SandboxID: sandbox.ID,
		Command: []string{"sh", "-c", fmt.Sprintf(`echo "limit=$(cat %[1]s)"; if echo 1 >%[1]s; then echo writable; fi`, file)},
		LogPath: filepath.Join(e.logsDir, podUID, "limited.log"),
		Linux:   runtime.Linux{Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, c.ID)
	if err := e.rt.StartContainer(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	waitState(t, e, c.ID, runtime.StateExited)
	logs, _ := os.ReadFile(c.LogPath)
	if !strings.Contains(string(logs), fmt.Sprintf("limit=%d\n", limit)) {
		t.Errorf("the container read %q, want its memory limit %d from %s", logs, limit, file)
	}
	if strings.Contains(string(logs), "writable") {
		t.Errorf("the container could write %s: %q", file, logs)
	}
}
