package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/defaults"
	"github.com/containerd/errdefs"
	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/image-spec/identity"
	"golang.org/x/sys/unix"
)

// Image volumes are mounted as containerd's CRI plugin mounts them
// (internal/cri/server/container_image_mount.go): once per sandbox and image, at
// DIR/SANDBOX/DIGEST, from a snapshot of the image's layers held by a lease of the
// sandbox; each container mounting one gets a read-only bind of that directory, or of a
// directory in it. They go with the sandbox (RemoveContainer).

// SetImageVolumeDir sets the directory image volumes are mounted under. Call it before
// creating containers.
func (r *Runtime) SetImageVolumeDir(dir string) { r.imageVolumeDir = dir }

// imageVolumeLease holds the snapshots of a sandbox's image volumes.
func imageVolumeLease(sandboxID string) string { return "minik8s-image-volumes-" + sandboxID }

// errImageVolumeMountFailed prefixes a failed image mount, as CRI's ErrImageVolumeMountFailed.
var errImageVolumeMountFailed = errors.New("ImageVolumeMountFailed")

// imageMounts turns the image mounts among ms, for a container of sandbox sandboxID, into
// read-only binds of the images' files, and names the images they mount.
func (r *Runtime) imageMounts(ctx context.Context, sandboxID string, ms []Mount) ([]Mount, []string, error) {
	out := slices.Clone(ms)
	var images []string
	for i, m := range out {
		if m.Image == "" {
			continue
		}
		root, name, err := r.mountImage(ctx, sandboxID, m.Image)
		if err == nil {
			out[i].HostPath, err = imageSubPath(root, m.ImageSubPath)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("failed to mount image volume: %w: %w", errImageVolumeMountFailed, err)
		}
		out[i].ReadOnly = true
		images = append(images, name)
	}
	return out, images, nil
}

// mountImage mounts the files of image ref for sandbox sandboxID, unless they are
// already, and returns where, and the image's name.
func (r *Runtime) mountImage(ctx context.Context, sandboxID, ref string) (string, string, error) {
	img, err := r.image(ctx, ref)
	if err != nil {
		return "", "", err
	}
	target := filepath.Join(r.imageVolumeDir, sandboxID, img.Target().Digest.Encoded())
	if err := os.MkdirAll(target, 0o755); err != nil {
		return "", "", err
	}
	mounted, err := mountinfo.Mounted(target)
	if err != nil {
		return "", "", err
	}
	if mounted { // for another container of the sandbox
		return target, img.Name(), nil
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return "", "", fmt.Errorf("failed to get diff IDs for image volume %q: %w", ref, err)
	}
	lease := imageVolumeLease(sandboxID)
	if _, err := r.client.LeasesService().Create(ctx, leases.WithID(lease)); err != nil && !errdefs.IsAlreadyExists(err) {
		return "", "", fmt.Errorf("failed to ensure lease %s: %w", lease, err)
	}
	// A view, not containerd's writable snapshot: the files are read-only on the host too.
	// The snapshot's key is its mount point, as containerd's.
	snapshots := r.client.SnapshotService(defaults.DefaultSnapshotter)
	mounts, err := snapshots.View(leases.WithLease(ctx, lease), target, identity.ChainID(diffIDs).String())
	if errdefs.IsAlreadyExists(err) {
		mounts, err = snapshots.Mounts(ctx, target)
	}
	if err != nil {
		return "", "", fmt.Errorf("failed to prepare for image volume %q: %w", ref, err)
	}
	if err := mount.All(mounts, target); err != nil {
		return "", "", fmt.Errorf("failed to mount image volume component %q: %w", target, err)
	}
	return target, img.Name(), nil
}

// imageSubPath is the directory sub of the image mounted at root, its symlinks resolved
// inside the image (containerd's ensureImageSubPath): CRI mounts only directories of an
// image. The mount is read-only, so the path found stays the one checked.
func imageSubPath(root, sub string) (string, error) {
	if sub == "" {
		return root, nil
	}
	f, err := os.OpenInRoot(root, sub)
	if err != nil {
		return "", fmt.Errorf("failed to ensure image subpath %q in %q: %w", sub, root, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("failed to ensure image subpath %q in %q: %w", sub, root, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("failed to ensure image subpath %q in %q: only directory subpath is supported", sub, root)
	}
	// Where the file opened really is: its symlinks resolved inside the image.
	return os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
}

// releaseImageMounts unmounts sandbox sandboxID's image volumes and removes their
// snapshots and lease, as containerd's cleanupImageMounts does when a sandbox stops.
func (r *Runtime) releaseImageMounts(ctx context.Context, sandboxID string) error {
	base := filepath.Join(r.imageVolumeDir, sandboxID)
	entries, err := os.ReadDir(base)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("image volumes of sandbox %s: %w", sandboxID, err)
	}
	snapshots := r.client.SnapshotService(defaults.DefaultSnapshotter)
	for _, e := range entries {
		target := filepath.Join(base, e.Name())
		if err := mount.UnmountAll(target, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("failed to unmount image volume component %q: %w", target, err)
		}
		if err := snapshots.Remove(ctx, target); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("failed to remove snapshot of image volume %q: %w", target, err)
		}
		if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	// The lease goes even when the directory is lost: its snapshots are collected with it.
	err = r.client.LeasesService().Delete(ctx, leases.Lease{ID: imageVolumeLease(sandboxID)}, leases.SynchronousDelete)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("failed to delete lease of image volumes of sandbox %s: %w", sandboxID, err)
	}
	if err := os.Remove(base); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
