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
// volumes: subPaths resolved (and made when missing, as the kubelet does) without
// leaving their volume, readOnly from the mount or the volume, propagation as asked.
// The errors are the kubelet's makeMounts' (which say nothing of the host's paths).
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
		source, imageSubPath := v.Path, ""
		switch {
		case vm.SubPath != "" && v.Image != "":
			// The runtime finds it in the image, as CRI's image mounts (kubelet 1.33+).
			if err := checkSubPath(vm.SubPath); err != nil {
				return nil, err
			}
			imageSubPath = vm.SubPath
		case vm.SubPath != "":
			var err error
			if source, err = subPath(v.Path, vm.SubPath, vm.Name, c.Name); err != nil {
				return nil, err
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
		if err := recursiveReadOnly(vm); err != nil {
			return nil, fmt.Errorf("failed to resolve recursive read-only mode: %w", err)
		}
		out = append(out, runtime.Mount{HostPath: source, ContainerPath: vm.MountPath, ReadOnly: vm.ReadOnly || v.ReadOnly, Propagation: propagation,
			Image: v.Image, ImageSubPath: imageSubPath})
	}
	return out, nil
}

// recursiveReadOnly is the kubelet's resolveRecursiveReadOnly for a runtime handler without
// recursive read-only mounts, as minilet's is (its node status says so): a mount asking for
// one IfPossible is a plain read-only mount, one asking for it Enabled is refused.
func recursiveReadOnly(vm corev1.VolumeMount) error {
	if vm.RecursiveReadOnly == nil || *vm.RecursiveReadOnly == corev1.RecursiveReadOnlyDisabled {
		return nil
	}
	if !vm.ReadOnly {
		return fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", vm.Name)
	}
	if vm.MountPropagation != nil && *vm.MountPropagation != corev1.MountPropagationNone {
		return fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q", vm.Name, *vm.MountPropagation)
	}
	switch mode := *vm.RecursiveReadOnly; mode {
	case corev1.RecursiveReadOnlyIfPossible:
		return nil
	case corev1.RecursiveReadOnlyEnabled:
		return fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime", vm.Name)
	default:
		return fmt.Errorf("unknown recursive read-only mode %q", mode)
	}
}

// subPath is the host path of sub inside the volume at base. A missing one is made, in
// any volume, with the mode of the volume's root (so an emptyDir's subPath is writable
// by all, an fsGroup's by the group), never through a symlink out of the volume; one
// that resolves out of the volume is refused: the kubelet's SafeMakeDir and
// PrepareSafeSubpath.
func subPath(base, sub, mount, container string) (string, error) {
	if err := checkSubPath(sub); err != nil {
		return "", err
	}
	path := filepath.Join(base, sub)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if err := makeSubPath(base, sub); err != nil {
			return "", fmt.Errorf("failed to create subPath directory for volumeMount %q of container %q", mount, container)
		}
	}
	resolved, err := filepath.EvalSymlinks(path)
	root, rootErr := filepath.EvalSymlinks(base)
	// A configMap's visible names link through ..data inside the volume: fine. A link
	// out of the volume is not.
	if err != nil || rootErr != nil || resolved != root && !strings.HasPrefix(resolved, root+"/") {
		return "", fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q", mount, container)
	}
	return resolved, nil
}

// checkSubPath refuses a subPath that is absolute or goes up, as the kubelet's makeMounts
// does for every volume.
func checkSubPath(sub string) error {
	if filepath.IsAbs(sub) {
		return fmt.Errorf("error SubPath `%s` must not be an absolute path", sub)
	}
	if slices.Contains(strings.Split(sub, "/"), "..") {
		return fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", sub)
	}
	return nil
}

// makeSubPath makes the missing directories of sub in the volume at base with the
// mode of base (umask aside), inside the volume only (an os.Root).
func makeSubPath(base, sub string) error {
	fi, err := os.Stat(base)
	if err != nil {
		return err
	}
	perm := fi.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSetuid | fs.ModeSticky)
	root, err := os.OpenRoot(base)
	if err != nil {
		return err
	}
	defer root.Close()
	dir := ""
	for _, part := range strings.Split(filepath.Clean(sub), "/") {
		dir = filepath.Join(dir, part)
		if _, err := root.Stat(dir); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := root.Mkdir(dir, perm&fs.ModePerm); err != nil { // special bits by Chmod only
			return err
		}
		if err := root.Chmod(dir, perm); err != nil {
			return err
		}
	}
	return nil
}

// ensureTmpfs mounts a tmpfs on dir unless one is there, as the kubelet's emptyDir does:
// with opts (its size) and noswap, so its pages never go to swap, where the kernel has it
// (6.4+, not in a user namespace), and no other flag (neither nosuid nor nodev).
func ensureTmpfs(dir, opts string) error {
	mounted, err := mountinfo.Mounted(dir)
	if err != nil {
		return fmt.Errorf("is %s a mount point: %w", dir, err)
	}
	if mounted {
		return nil
	}
	noswap := "noswap"
	if opts != "" {
		noswap = opts + ",noswap"
	}
	err = unix.Mount("tmpfs", dir, "tmpfs", 0, noswap)
	if errors.Is(err, unix.EINVAL) { // a kernel without noswap
		err = unix.Mount("tmpfs", dir, "tmpfs", 0, opts)
	}
	if err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// TearDown unmounts and removes everything of a pod under its directory. Removing a
// pod that has nothing here is not an error.
func (m *Manager) TearDown(uid string) error {
	m.mu.Lock()
	delete(m.mounted, uid)
	m.mu.Unlock()
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
