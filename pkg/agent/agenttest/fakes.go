// Package agenttest holds the in-memory container runtime and network that the unit tests
// of the agent and of podsync drive in place of containerd and CNI.
package agenttest

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

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// Runtime keeps containers in memory and logs every call that changes them.
type Runtime struct {
	Clock clock.Clock

	Mu         sync.Mutex
	Containers []*runtime.Container // in creation order
	Images     map[string]bool
	calls      []string
	nextID     int
	PullErr    error
	StartErr   error
	ResizeErr  error // what UpdateContainerResources fails with
	versionErr error
	StopGrace  map[string]time.Duration
	// SandboxConfigs: what RunSandbox was asked for, in order.
	SandboxConfigs []runtime.SandboxConfig
	// PIDTargets: the PIDTargetID each container was created with, by name.
	PIDTargets map[string]string
	// execs: what Exec runs, answered by ExecFn (exit 0 without one).
	ExecFn func(container string, cmd []string) (int, string)
}

// NewRuntime is an empty runtime whose times come from c.
func NewRuntime(c clock.Clock) *Runtime {
	return &Runtime{Clock: c, Images: map[string]bool{}, StopGrace: map[string]time.Duration{}, PIDTargets: map[string]string{}}
}

// Find is the container of that id, nil if there is none.
func (f *Runtime) Find(id string) *runtime.Container {
	for _, c := range f.Containers {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func (f *Runtime) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// TakeCalls returns the calls made since the last TakeCalls.
func (f *Runtime) TakeCalls() []string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	calls := f.calls
	f.calls = nil
	return calls
}

func (f *Runtime) Version(context.Context) (string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return "1.6.20", f.versionErr
}

func (f *Runtime) EnsureImage(_ context.Context, ref string, tar func() (io.ReadCloser, error)) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if !f.Images[ref] {
		r, err := tar()
		if err != nil {
			return err
		}
		r.Close()
		f.Images[ref] = true
		f.record("import %s", ref)
	}
	return nil
}

func (f *Runtime) HasImage(_ context.Context, ref string) (bool, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.Images[ref], nil
}

func (f *Runtime) PullImage(_ context.Context, ref string, _ runtime.PullOptions) (int64, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.record("pull %s", ref)
	if f.PullErr != nil {
		return 0, f.PullErr
	}
	f.Images[ref] = true
	return 4096, nil
}

func (f *Runtime) RunSandbox(_ context.Context, cfg runtime.SandboxConfig) (runtime.Container, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if _, err := os.Stat(cfg.NetNSPath); err != nil {
		return runtime.Container{}, fmt.Errorf("netns: %w", err)
	}
	f.nextID++
	c := &runtime.Container{
		ID: fmt.Sprintf("sb%d", f.nextID), PodUID: cfg.PodUID, PodNamespace: cfg.PodNamespace, PodName: cfg.PodName,
		Name: "sandbox", Sandbox: true, NetNSPath: cfg.NetNSPath, HostNetwork: cfg.HostNetwork, State: runtime.StateRunning, StartedAt: f.Clock.Now(),
	}
	f.Containers = append(f.Containers, c)
	f.SandboxConfigs = append(f.SandboxConfigs, cfg)
	f.record("sandbox %s", cfg.PodName)
	return *c, nil
}

func (f *Runtime) SetSandboxIP(_ context.Context, id string, ip net.IP) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	c := f.Find(id)
	if c == nil || !c.Sandbox {
		return fmt.Errorf("no sandbox %s", id)
	}
	c.PodIP = ip.String()
	return nil
}

func (f *Runtime) CreateContainer(_ context.Context, cfg runtime.ContainerConfig) (runtime.Container, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	sb := f.Find(cfg.SandboxID)
	if sb == nil || sb.State != runtime.StateRunning {
		return runtime.Container{}, fmt.Errorf("sandbox %s is not running", cfg.SandboxID)
	}
	if !f.Images[cfg.Image] {
		return runtime.Container{}, fmt.Errorf("image %s not present", cfg.Image)
	}
	f.nextID++
	c := &runtime.Container{
		ID: fmt.Sprintf("c%d", f.nextID), PodUID: cfg.PodUID, Name: cfg.Name, Image: cfg.Image, SpecHash: cfg.SpecHash,
		SandboxID: cfg.SandboxID, LogPath: cfg.LogPath, State: runtime.StateCreated, RestartCount: cfg.RestartCount,
		Resources: cfg.Labels[runtime.LabelResources], TerminationLog: cfg.TerminationLog,
	}
	f.Containers = append(f.Containers, c)
	f.PIDTargets[cfg.Name] = cfg.PIDTargetID
	f.record("create %s", cfg.Name)
	return *c, nil
}

func (f *Runtime) StartContainer(_ context.Context, id string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	c := f.Find(id)
	if c == nil {
		return fmt.Errorf("no container %s", id)
	}
	f.record("start %s", c.Name)
	if f.StartErr != nil { // as the real runtime: exited with 128 and the error
		c.State, c.ExitCode, c.FinishedAt, c.StartError = runtime.StateExited, 128, f.Clock.Now(), f.StartErr.Error()
		return f.StartErr
	}
	c.State, c.StartedAt = runtime.StateRunning, f.Clock.Now()
	return nil
}

func (f *Runtime) StopContainer(_ context.Context, id string, grace time.Duration) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	c := f.Find(id)
	if c == nil || c.State != runtime.StateRunning {
		return nil
	}
	f.record("stop %s", c.Name)
	f.StopGrace[c.Name] = grace
	c.State, c.ExitCode, c.FinishedAt = runtime.StateExited, 143, f.Clock.Now()
	return nil
}

func (f *Runtime) Exec(_ context.Context, id string, opts runtime.ExecOptions) (int, error) {
	f.Mu.Lock()
	c := f.Find(id)
	if c == nil || c.State != runtime.StateRunning {
		f.Mu.Unlock()
		return 0, fmt.Errorf("container %s is not running", id)
	}
	f.record("exec %s %s", c.Name, strings.Join(opts.Cmd, " "))
	name, fn := c.Name, f.ExecFn
	f.Mu.Unlock()
	if fn == nil {
		return 0, nil
	}
	code, out := fn(name, opts.Cmd)
	if opts.Stdout != nil {
		io.WriteString(opts.Stdout, out)
	}
	return code, nil
}

func (f *Runtime) WatchOOM(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func (f *Runtime) ListImages(context.Context) ([]runtime.Image, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	var out []runtime.Image
	for name := range f.Images {
		out = append(out, runtime.Image{Name: name})
	}
	return out, nil
}

func (f *Runtime) RemoveImage(_ context.Context, name string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	delete(f.Images, name)
	return nil
}

func (f *Runtime) ImageFsUsage(context.Context) (uint64, uint64, error) { return 1, 100, nil }

func (f *Runtime) RemoveContainer(_ context.Context, id string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if c := f.Find(id); c != nil {
		f.record("remove %s", c.Name)
		f.Containers = slices.DeleteFunc(f.Containers, func(c *runtime.Container) bool { return c.ID == id })
	}
	return nil
}

func (f *Runtime) ListContainers(_ context.Context, podUID string) ([]runtime.Container, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	var out []runtime.Container
	for _, c := range f.Containers {
		if podUID == "" || c.PodUID == podUID {
			out = append(out, *c)
		}
	}
	return out, nil
}

// Exit makes the running container called name of a pod exit with code.
func (f *Runtime) Exit(podUID, name string, code int32) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for _, c := range f.Containers {
		if c.PodUID == podUID && c.Name == name && c.State == runtime.StateRunning {
			c.State, c.ExitCode, c.FinishedAt = runtime.StateExited, code, f.Clock.Now()
			return
		}
	}
	panic("no running container " + name)
}

// Named returns the containers of a pod called name.
func (f *Runtime) Named(podUID, name string) []runtime.Container {
	all, _ := f.ListContainers(context.Background(), podUID)
	return slices.DeleteFunc(all, func(c runtime.Container) bool { return c.Name != name })
}

// Network makes netns as plain files and hands out addresses from 10.244.1.0/24.
type Network struct {
	Mu       sync.Mutex
	attached map[string]string // sandbox id -> netns path
	nextIP   int
	SetUpErr error
	// TearDownErr fails CNI DEL, CheckErr CNI CHECK, ReadyErr says the network is not
	// ready, while set.
	TearDownErr, CheckErr, ReadyErr error
	Checks                          int
	Calls                           []string
	NodeIsHost                      bool
}

// NewNetwork is a network with no pod attached.
func NewNetwork() *Network { return &Network{attached: map[string]string{}} }

func (n *Network) NewNetNS(dir, name string) (string, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return "", err
	}
	return path, f.Close()
}

func (n *Network) RemoveNetNS(path string) error { return os.Remove(path) }

// BindNodeNetNS makes a plain file where the node's namespace would be bound, and tells
// the node is the host when NodeIsHost is set.
func (n *Network) BindNodeNetNS(dir, name string) (string, bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	path := filepath.Join(dir, name)
	n.Mu.Lock()
	defer n.Mu.Unlock()
	return path, n.NodeIsHost, os.WriteFile(path, nil, 0o444)
}

func (n *Network) Ready() error {
	n.Mu.Lock()
	defer n.Mu.Unlock()
	return n.ReadyErr
}

func (n *Network) Check(_ context.Context, id, _ string, _ network.PodRef) error {
	n.Mu.Lock()
	defer n.Mu.Unlock()
	n.Checks++
	return n.CheckErr
}

func (n *Network) SetUp(_ context.Context, id, netnsPath string, _ network.PodRef, _ network.PodOptions) (net.IP, error) {
	n.Mu.Lock()
	defer n.Mu.Unlock()
	n.Calls = append(n.Calls, "setup "+id)
	if n.SetUpErr != nil {
		return nil, n.SetUpErr
	}
	if _, err := os.Stat(netnsPath); err != nil {
		return nil, errors.New("netns missing")
	}
	n.nextIP++
	n.attached[id] = netnsPath
	return net.IPv4(10, 244, 1, byte(1+n.nextIP)), nil
}

func (n *Network) TearDown(_ context.Context, id, _ string, _ network.PodRef) error {
	n.Mu.Lock()
	defer n.Mu.Unlock()
	n.Calls = append(n.Calls, "teardown "+id)
	if n.TearDownErr != nil {
		return n.TearDownErr
	}
	delete(n.attached, id)
	return nil
}

// AttachedCount is how many sandboxes are set up and not torn down.
func (n *Network) AttachedCount() int {
	n.Mu.Lock()
	defer n.Mu.Unlock()
	return len(n.attached)
}

// Env is the fakes a test's node runs on: the API (client-go's fake clientset), the
// runtime and network in memory, a fake clock and an event recorder to read.
type Env struct {
	Client  *fake.Clientset
	Runtime *Runtime
	Network *Network
	Clock   *clocktesting.FakeClock
	Events  *record.FakeRecorder
}

// NewEnv is a fresh Env whose clock starts at a fixed time.
func NewEnv() *Env {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	return &Env{Client: NewClient(), Runtime: NewRuntime(clk), Network: NewNetwork(), Clock: clk, Events: record.NewFakeRecorder(10000)}
}

// TakeEvents returns the events recorded since the last call.
func (e *Env) TakeEvents() []string {
	var out []string
	for {
		select {
		case ev := <-e.Events.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// NewClient is a fake clientset whose pod status writes keep the stored pod's deletion
// (deletionTimestamp, grace period), as the API server's status strategy does: the fake
// otherwise stores the whole object sent, and a status write racing a delete undid it.
func NewClient() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("update", "pods", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		u, ok := action.(clienttesting.UpdateAction)
		if !ok || u.GetSubresource() != "status" {
			return false, nil, nil
		}
		pod, ok := u.GetObject().(*corev1.Pod)
		if !ok {
			return false, nil, nil
		}
		if stored, err := c.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), pod.Namespace, pod.Name); err == nil {
			s := stored.(*corev1.Pod)
			pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = s.DeletionTimestamp, s.DeletionGracePeriodSeconds
		}
		return false, nil, nil // the tracker stores it
	})
	return c
}

// UpdateContainerResources records "resize NAME cpu=SHARES/QUOTA memory=LIMIT" and the
// container's new record.
func (f *Runtime) UpdateContainerResources(_ context.Context, id string, res *specs.LinuxResources, recorded string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	c := f.Find(id)
	if c == nil || c.State != runtime.StateRunning {
		return fmt.Errorf("container %s is not running", id)
	}
	var quota, memory int64
	if res.CPU.Quota != nil {
		quota = *res.CPU.Quota
	}
	if res.Memory != nil && res.Memory.Limit != nil {
		memory = *res.Memory.Limit
	}
	f.record("resize %s cpu=%d/%d memory=%d", c.Name, *res.CPU.Shares, quota, memory)
	if f.ResizeErr != nil {
		return f.ResizeErr
	}
	c.Resources = recorded
	return nil
}
