package podsync

import (
	"context"
	"io"
	"net"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minik8s/minik8s/pkg/agent/hostnetwork"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// Runtime is the part of pkg/runtime (containerd) the syncer drives. It is an
// interface so the sync logic can be tested against a fake.
type Runtime interface {
	// Version is the runtime's version; an error means the runtime is not reachable.
	Version(ctx context.Context) (string, error)
	EnsureImage(ctx context.Context, ref string, tar func() (io.ReadCloser, error)) error
	HasImage(ctx context.Context, ref string) (bool, error)
	PullImage(ctx context.Context, ref string, opts runtime.PullOptions) (size int64, err error)
	RunSandbox(ctx context.Context, cfg runtime.SandboxConfig) (runtime.Container, error)
	// SetSandboxIP records the pod's address on its sandbox, for a restarted minilet.
	SetSandboxIP(ctx context.Context, id string, ip net.IP) error
	CreateContainer(ctx context.Context, cfg runtime.ContainerConfig) (runtime.Container, error)
	StartContainer(ctx context.Context, id string) error
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	// UpdateContainerResources gives a running container new CPU and memory settings and
	// records recorded (runtime.LabelResources) on it.
	UpdateContainerResources(ctx context.Context, id string, res *specs.LinuxResources, recorded string) error
	RemoveContainer(ctx context.Context, id string) error
	ListImages(ctx context.Context) ([]runtime.Image, error)
	RemoveImage(ctx context.Context, name string) error
	ImageFsUsage(ctx context.Context) (used, capacity uint64, err error)
	// WatchOOM marks OOM-killed containers until ctx ends or the event stream fails.
	WatchOOM(ctx context.Context) error
	// Exec runs a process in a running container (exec probes and lifecycle hooks).
	Exec(ctx context.Context, id string, opts runtime.ExecOptions) (int, error)
	// ListContainers lists the containers of one pod, or of every pod when podUID is "".
	ListContainers(ctx context.Context, podUID string) ([]runtime.Container, error)
}

// Network is the part of pkg/network the syncer drives: pod network
// namespaces and the CNI plugins that wire them.
type Network interface {
	hostnetwork.Binder // the node's namespace, for hostNetwork pods
	NewNetNS(dir, name string) (path string, err error)
	RemoveNetNS(path string) error
	SetUp(ctx context.Context, id, netnsPath string, pod network.PodRef, opts network.PodOptions) (net.IP, error)
	// Check is CNI CHECK: is the sandbox's network still as SetUp left it?
	Check(ctx context.Context, id, netnsPath string, pod network.PodRef) error
	TearDown(ctx context.Context, id, netnsPath string, pod network.PodRef) error
	// Ready is nil once pods can be set up (an operator's CNI may not be installed yet).
	Ready() error
}
