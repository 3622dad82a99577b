package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
)

// DaemonConfig is a containerd configuration for a private daemon (a lab's or a test's):
// its own root, state and socket, and no CRI plugin, which minik8s does not use.
func DaemonConfig(root, state, address string) []byte {
	return fmt.Appendf(nil, `version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(root, "root"), state, address, filepath.Join(root, "opt"))
}

// Purge kills and deletes every task and container in every namespace of the containerd at
// address, so no shim, container process or mount outlives a lab or a test, and removes the
// namespaces' (then empty) cgroup directories.
func Purge(ctx context.Context, address string) error {
	client, err := containerd.New(address)
	if err != nil {
		return fmt.Errorf("containerd at %s: %w", address, err)
	}
	defer client.Close()
	nsList, err := client.NamespaceService().List(ctx)
	if err != nil {
		return fmt.Errorf("listing containerd namespaces at %s: %w", address, err)
	}
	var errs []error
	for _, ns := range nsList {
		nsCtx := namespaces.WithNamespace(ctx, ns)
		list, err := client.Containers(nsCtx)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing containers of %s: %w", ns, err))
			continue
		}
		for _, c := range list {
			if task, err := c.Task(nsCtx, nil); err == nil {
				if _, err := task.Delete(nsCtx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("deleting task %s/%s: %w", ns, c.ID(), err))
				}
			}
			if err := c.Delete(nsCtx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting container %s/%s: %w", ns, c.ID(), err))
			}
		}
		// runc removes each container's cgroup and state but not the namespace's parent
		// directories; rmdir only succeeds on empty ones, so nothing in use is touched.
		dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", ns))
		for _, dir := range append(dirs, filepath.Join("/run/containerd/runc", ns)) {
			_ = os.Remove(dir)
		}
	}
	return errors.Join(errs...)
}
