package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// fakeRuntime keeps containers in memory and logs every call that changes them.
type fakeRuntime struct {
	clock clock.Clock

	mu         sync.Mutex
	containers []*runtime.Container // in creation order
	images     map[string]bool
	calls      []string
	nextID     int
	pullErr    error
	startErr   error
	versionErr error
	stopGrace  map[string]time.Duration
	// sandboxConfigs: what RunSandbox was asked for, in order.
	sandboxConfigs []runtime.SandboxConfig
	// pidTargets: the PIDTargetID each container was created with, by name.
	pidTargets map[string]string
	// execs: what Exec runs, answered by execFn (exit 0 without one).
	execFn func(container string, cmd []string) (int, string)
}

func newFakeRuntime(c clock.Clock) *fakeRuntime {
	return &fakeRuntime{clock: c, images: map[string]bool{}, stopGrace: map[string]time.Duration{}, pidTargets: map[string]string{}}
}

func (f *fakeRuntime) find(id string) *runtime.Container {
	for _, c := range f.containers {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func (f *fakeRuntime) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// takeCalls returns the calls made since the last takeCalls.
func (f *fakeRuntime) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := f.calls
	f.calls = nil
	return calls
}

func (f *fakeRuntime) Version(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return "1.6.20", f.versionErr
}

func (f *fakeRuntime) EnsureImage(_ context.Context, ref string, tar func() (io.ReadCloser, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.images[ref] {
		r, err := tar()
		if err != nil {
			return err
		}
		r.Close()
		f.images[ref] = true
		f.record("import %s", ref)
	}
	return nil
}

func (f *fakeRuntime) HasImage(_ context.Context, ref string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.images[ref], nil
}

func (f *fakeRuntime) PullImage(_ context.Context, ref string, _ runtime.PullOptions) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("pull %s", ref)
	if f.pullErr != nil {
		return 0, f.pullErr
	}
	f.images[ref] = true
	return 4096, nil
}

func (f *fakeRuntime) RunSandbox(_ context.Context, cfg runtime.SandboxConfig) (runtime.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := os.Stat(cfg.NetNSPath); err != nil {
		return runtime.Container{}, fmt.Errorf("netns: %w", err)
	}
	f.nextID++
	c := &runtime.Container{
		ID: fmt.Sprintf("sb%d", f.nextID), PodUID: cfg.PodUID, PodNamespace: cfg.PodNamespace, PodName: cfg.PodName,
		Name: "sandbox", Sandbox: true, NetNSPath: cfg.NetNSPath, HostNetwork: cfg.HostNetwork, State: runtime.StateRunning, StartedAt: f.clock.Now(),
	}
	f.containers = append(f.containers, c)
	f.sandboxConfigs = append(f.sandboxConfigs, cfg)
	f.record("sandbox %s", cfg.PodName)
	return *c, nil
}

func (f *fakeRuntime) SetSandboxIP(_ context.Context, id string, ip net.IP) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.find(id)
	if c == nil || !c.Sandbox {
		return fmt.Errorf("no sandbox %s", id)
	}
	c.PodIP = ip.String()
	return nil
}

func (f *fakeRuntime) CreateContainer(_ context.Context, cfg runtime.ContainerConfig) (runtime.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.find(cfg.SandboxID)
	if sb == nil || sb.State != runtime.StateRunning {
		return runtime.Container{}, fmt.Errorf("sandbox %s is not running", cfg.SandboxID)
	}
	if !f.images[cfg.Image] {
		return runtime.Container{}, fmt.Errorf("image %s not present", cfg.Image)
	}
	f.nextID++
	c := &runtime.Container{
		ID: fmt.Sprintf("c%d", f.nextID), PodUID: cfg.PodUID, Name: cfg.Name, Image: cfg.Image, SpecHash: cfg.SpecHash,
		SandboxID: cfg.SandboxID, LogPath: cfg.LogPath, State: runtime.StateCreated, RestartCount: cfg.RestartCount,
	}
	f.containers = append(f.containers, c)
	f.pidTargets[cfg.Name] = cfg.PIDTargetID
	f.record("create %s", cfg.Name)
	return *c, nil
}

func (f *fakeRuntime) StartContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.find(id)
	if c == nil {
		return fmt.Errorf("no container %s", id)
	}
	f.record("start %s", c.Name)
	if f.startErr != nil { // as the real runtime: exited with 128 and the error
		c.State, c.ExitCode, c.FinishedAt, c.StartError = runtime.StateExited, 128, f.clock.Now(), f.startErr.Error()
		return f.startErr
	}
	c.State, c.StartedAt = runtime.StateRunning, f.clock.Now()
	return nil
}

func (f *fakeRuntime) StopContainer(_ context.Context, id string, grace time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.find(id)
	if c == nil || c.State != runtime.StateRunning {
		return nil
	}
	f.record("stop %s", c.Name)
	f.stopGrace[c.Name] = grace
	c.State, c.ExitCode, c.FinishedAt = runtime.StateExited, 143, f.clock.Now()
	return nil
}

func (f *fakeRuntime) Exec(_ context.Context, id string, opts runtime.ExecOptions) (int, error) {
	f.mu.Lock()
	c := f.find(id)
	if c == nil || c.State != runtime.StateRunning {
		f.mu.Unlock()
		return 0, fmt.Errorf("container %s is not running", id)
	}
	f.record("exec %s %s", c.Name, strings.Join(opts.Cmd, " "))
	name, fn := c.Name, f.execFn
	f.mu.Unlock()
	if fn == nil {
		return 0, nil
	}
	code, out := fn(name, opts.Cmd)
	if opts.Stdout != nil {
		io.WriteString(opts.Stdout, out)
	}
	return code, nil
}

func (f *fakeRuntime) WatchOOM(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func (f *fakeRuntime) ListImages(context.Context) ([]runtime.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []runtime.Image
	for name := range f.images {
		out = append(out, runtime.Image{Name: name})
	}
	return out, nil
}

func (f *fakeRuntime) RemoveImage(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.images, name)
	return nil
}

func (f *fakeRuntime) ImageFsUsage(context.Context) (uint64, uint64, error) { return 1, 100, nil }

func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.find(id); c != nil {
		f.record("remove %s", c.Name)
		f.containers = slices.DeleteFunc(f.containers, func(c *runtime.Container) bool { return c.ID == id })
	}
	return nil
}

func (f *fakeRuntime) ListContainers(_ context.Context, podUID string) ([]runtime.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []runtime.Container
	for _, c := range f.containers {
		if podUID == "" || c.PodUID == podUID {
			out = append(out, *c)
		}
	}
	return out, nil
}

// exit makes the running container called name of a pod exit with code.
func (f *fakeRuntime) exit(podUID, name string, code int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.containers {
		if c.PodUID == podUID && c.Name == name && c.State == runtime.StateRunning {
			c.State, c.ExitCode, c.FinishedAt = runtime.StateExited, code, f.clock.Now()
			return
		}
	}
	panic("no running container " + name)
}

// named returns the containers of a pod called name.
func (f *fakeRuntime) named(podUID, name string) []runtime.Container {
	all, _ := f.ListContainers(context.Background(), podUID)
	return slices.DeleteFunc(all, func(c runtime.Container) bool { return c.Name != name })
}

// fakeNetwork makes netns as plain files and hands out addresses from 10.244.1.0/24.
type fakeNetwork struct {
	mu       sync.Mutex
	attached map[string]string // sandbox id -> netns path
	nextIP   int
	setUpErr error
	// tearDownErr fails CNI DEL, checkErr CNI CHECK, while set.
	tearDownErr, checkErr error
	checks                int
	calls                 []string
	nodeIsHost            bool
}

func newFakeNetwork() *fakeNetwork { return &fakeNetwork{attached: map[string]string{}} }

func (n *fakeNetwork) NewNetNS(dir, name string) (string, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return "", err
	}
	return path, f.Close()
}

func (n *fakeNetwork) RemoveNetNS(path string) error { return os.Remove(path) }

// BindNodeNetNS makes a plain file where the node's namespace would be bound, and tells
// the node is the host when nodeIsHost is set.
func (n *fakeNetwork) BindNodeNetNS(dir, name string) (string, bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	path := filepath.Join(dir, name)
	n.mu.Lock()
	defer n.mu.Unlock()
	return path, n.nodeIsHost, os.WriteFile(path, nil, 0o444)
}

func (n *fakeNetwork) Check(_ context.Context, id, _ string, _ network.PodRef) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.checks++
	return n.checkErr
}

func (n *fakeNetwork) SetUp(_ context.Context, id, netnsPath string, _ network.PodRef, _ network.PodOptions) (net.IP, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "setup "+id)
	if n.setUpErr != nil {
		return nil, n.setUpErr
	}
	if _, err := os.Stat(netnsPath); err != nil {
		return nil, errors.New("netns missing")
	}
	n.nextIP++
	n.attached[id] = netnsPath
	return net.IPv4(10, 244, 1, byte(1+n.nextIP)), nil
}

func (n *fakeNetwork) TearDown(_ context.Context, id, _ string, _ network.PodRef) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "teardown "+id)
	if n.tearDownErr != nil {
		return n.tearDownErr
	}
	delete(n.attached, id)
	return nil
}

func (n *fakeNetwork) attachedCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.attached)
}
