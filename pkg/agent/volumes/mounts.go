package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// ContainerMounts turns a container's volumeMounts into bind mounts of the pod's
// volumes: subPaths resolved (and made in writable volumes, as the kubelet does) without
// leaving their volume, readOnly from the mount or the volume, propagation as asked.
func ContainerMounts(c *corev1.Container, vols map[string]Volume) ([]runtime.Mount, error) {
	var out []runtime.Mount
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q of container %s: the pod has no such volume ready", vm.Name, c.Name)
		}
		if vm.SubPathExpr != "" {
			return nil, fmt.Errorf("volumeMount %q of container %s: subPathExpr not expanded", vm.Name, c.Name)
		}
		source := v.Path
		if vm.SubPath != "" {
			var err error
			if source, err = subPath(v, vm.SubPath); err != nil {
				return nil, fmt.Errorf("volumeMount %q of container %s: %w", vm.Name, c.Name, err)
			}
		}
		propagation := "rprivate"
		if vm.MountPropagation != nil {
			switch *vm.MountPropagation {
			case corev1.MountPropagationHostToContainer:
				propagation = "rslave"
			case corev1.MountPropagationBidirectional:
				propagation = "rshared"
			}
		}
		out = append(out, runtime.Mount{HostPath: source, ContainerPath: vm.MountPath, ReadOnly: vm.ReadOnly || v.ReadOnly, Propagation: propagation})
	}
	return out, nil
}

// subPath is the host path of sub inside volume v, refusing one that leaves it by '..'
// or through a symlink; a missing one is made as a directory in a writable volume.
func subPath(v Volume, sub string) (string, error) {
	if filepath.IsAbs(sub) || slices.Contains(strings.Split(sub, "/"), "..") {
		return "", fmt.Errorf("subPath %q must be a relative path without '..'", sub)
	}
	path := filepath.Join(v.Path, sub)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) && v.Writable {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return "", fmt.Errorf("create subPath %q: %w", sub, err)
		}
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	base, err := filepath.EvalSymlinks(v.Path)
	if err != nil {
		return "", err
	}
	// A configMap's visible names link through ..data inside the volume: fine. A link
	// out of the volume is not.
	if resolved != base && !strings.HasPrefix(resolved, base+"/") {
		return "", fmt.Errorf("subPath %q resolves to %s, outside its volume", sub, resolved)
	}
	return resolved, nil
}

// ensureTmpfs mounts a tmpfs on dir unless one is there.
func ensureTmpfs(dir, opts string) error {
	mounted, err := mountinfo.Mounted(dir)
	if err != nil {
		return fmt.Errorf("is %s a mount point: %w", dir, err)
	}
	if mounted {
		return nil
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// TearDown unmounts and removes everything of a pod under its directory. Removing a
// pod that has nothing here is not an error.
func (m *Manager) TearDown(uid string) error {
	dir := m.PodDir(uid)
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return fmt.Errorf("list mounts under %s: %w", dir, err)
	}
	// Deepest first, so nothing is unmounted from under another mount.
	slices.SortFunc(mounts, func(a, b *mountinfo.Info) int { return len(b.Mountpoint) - len(a.Mountpoint) })
	for _, mnt := range mounts {
		if err := unix.Unmount(mnt.Mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", mnt.Mountpoint, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove volumes of pod %s: %w", uid, err)
	}
	return nil
}

// PodUIDs lists the pods that have a directory here (for orphan cleanup).
func (m *Manager) PodUIDs() ([]string, error) {
	entries, err := os.ReadDir(m.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var uids []string
	for _, e := range entries {
		uids = append(uids, e.Name())
	}
	return uids, nil
}
