package runtime

import (
	"context"
	"fmt"

	"github.com/containerd/containerd/v2/defaults"
	"github.com/containerd/containerd/v2/plugins"
	"golang.org/x/sys/unix"
)

// FsUsage is what a container's writable layer holds.
type FsUsage struct {
	Bytes  uint64
	Inodes uint64
}

// ContainerFsUsage is the size of container id's writable layer, as its snapshotter
// counts it (for overlayfs a walk of the upper directory, done by containerd: callers
// should ask seldom).
func (r *Runtime) ContainerFsUsage(ctx context.Context, id string) (FsUsage, error) {
	ctx = r.nsContext(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return FsUsage{}, fmt.Errorf("container %s: %w", id, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return FsUsage{}, fmt.Errorf("container %s: %w", id, err)
	}
	if info.SnapshotKey == "" {
		return FsUsage{}, fmt.Errorf("container %s has no writable layer", id)
	}
	u, err := r.client.SnapshotService(info.Snapshotter).Usage(ctx, info.SnapshotKey)
	if err != nil {
		return FsUsage{}, fmt.Errorf("writable layer of container %s: %w", id, err)
	}
	return FsUsage{Bytes: uint64(u.Size), Inodes: uint64(u.Inodes)}, nil
}

// FsInfo is a filesystem's size and use, from statfs.
type FsInfo struct {
	Path                           string
	Capacity, Available, Used      uint64 // bytes
	Inodes, InodesFree, InodesUsed uint64
}

// StatFs describes the filesystem holding path.
func StatFs(path string) (FsInfo, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return FsInfo{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	bs := uint64(fs.Bsize)
	return FsInfo{Path: path,
		Capacity: fs.Blocks * bs, Available: fs.Bavail * bs, Used: (fs.Blocks - fs.Bfree) * bs,
		Inodes: fs.Files, InodesFree: fs.Ffree, InodesUsed: fs.Files - fs.Ffree}, nil
}

// ImageFs describes the filesystem of the default snapshotter, where images and the
// containers' writable layers are (the kubelet's imagefs).
func (r *Runtime) ImageFs(ctx context.Context) (FsInfo, error) {
	root, err := r.snapshotterRoot(ctx)
	if err != nil {
		return FsInfo{}, err
	}
	return StatFs(root)
}

func (r *Runtime) snapshotterRoot(ctx context.Context) (string, error) {
	resp, err := r.client.IntrospectionService().Plugins(ctx, `type=="io.containerd.snapshotter.v1",id=="`+defaults.DefaultSnapshotter+`"`)
	if err != nil {
		return "", fmt.Errorf("asking containerd for its snapshotter: %w", err)
	}
	if len(resp.Plugins) == 0 || resp.Plugins[0].Exports[plugins.SnapshotterRootDir] == "" {
		return "", fmt.Errorf("containerd did not say where snapshotter %s keeps its data", defaults.DefaultSnapshotter)
	}
	return resp.Plugins[0].Exports[plugins.SnapshotterRootDir], nil
}
