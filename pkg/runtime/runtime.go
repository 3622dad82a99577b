// Package runtime runs pods through containerd's Go client: images (import, pull),
// pause sandboxes holding a pod's namespaces, and app containers joining them. All of a
// node's objects live in one containerd namespace; what Kubernetes needs to know about a
// container (pod, name, spec hash, start and exit) is kept in containerd labels, so the
// state survives a minilet restart.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
)

// connectTimeout bounds how long New waits for containerd to answer.
const connectTimeout = 5 * time.Second

// Runtime is a connection to containerd, scoped to one containerd namespace. It is safe
// for concurrent use.
type Runtime struct {
	client    *containerd.Client
	address   string
	namespace string
	logs      *containerLogs
	// imageVolumeDir holds the image volumes' mounts, a directory per sandbox.
	imageVolumeDir string
}

// New connects to the containerd socket at address and checks that it answers.
func New(ctx context.Context, address, namespace string) (*Runtime, error) {
	if namespace == "" {
		return nil, errors.New("containerd namespace must not be empty")
	}
	// The client's dialer waits for a missing socket to appear; fail at once instead.
	if _, err := os.Stat(strings.TrimPrefix(address, "unix://")); err != nil {
		return nil, fmt.Errorf("containerd at %s is not reachable: %w", address, err)
	}
	client, err := containerd.New(address,
		containerd.WithDefaultNamespace(namespace),
		containerd.WithTimeout(connectTimeout))
	if err != nil {
		return nil, fmt.Errorf("containerd at %s: %w", address, err)
	}
	versionCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if _, err := client.Version(versionCtx); err != nil {
		client.Close()
		return nil, fmt.Errorf("containerd at %s is not reachable: %w", address, err)
	}
	logs := &containerLogs{cfg: DefaultLogConfig(filepath.Join(os.TempDir(), "minik8s-fifo", namespace)), copied: map[string]*copied{}}
	imageVolumes := filepath.Join(os.TempDir(), "minik8s-image-volumes", namespace)
	return &Runtime{client: client, address: address, namespace: namespace, logs: logs, imageVolumeDir: imageVolumes}, nil
}

// SetLogConfig sets where the pipes of containers started from now on are, and how
// their logs rotate. Call it before starting containers.
func (r *Runtime) SetLogConfig(cfg LogConfig) {
	r.logs.mu.Lock()
	defer r.logs.mu.Unlock()
	r.logs.cfg = cfg
}

// Close stops copying containers' output and closes the connection to containerd;
// containers keep running, their output held until a new Runtime attaches (AttachLogs).
func (r *Runtime) Close() error {
	r.logs.stop()
	return r.client.Close()
}

// Version is containerd's version; an error means containerd does not answer.
func (r *Runtime) Version(ctx context.Context) (string, error) {
	v, err := r.client.Version(ctx)
	if err != nil {
		return "", fmt.Errorf("containerd at %s: %w", r.address, err)
	}
	return v.Version, nil
}

// Namespace is the containerd namespace this runtime works in.
func (r *Runtime) Namespace() string {
	return r.namespace
}

// nsContext scopes ctx to the runtime's namespace; parts of the client read the
// namespace from the context rather than from the connection's default.
func (r *Runtime) nsContext(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.namespace)
}
