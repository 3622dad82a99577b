package volumes

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// fsGroupOf is the group a pod's volumes are given (securityContext.fsGroup), or nil.
func fsGroupOf(pod *corev1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// setOwnership gives everything under dir to group gid, readable (and, unless
// readOnly, writable) by the group, with setgid directories so new files inherit it:
// the kubelet's SetVolumeOwnership. Symlinks are not followed.
func setOwnership(dir string, gid int64, readOnly bool) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, int(gid)); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mask := fs.FileMode(0o660)
		if readOnly {
			mask = 0o440
		}
		if d.IsDir() {
			mask |= fs.ModeSetgid | 0o110
		}
		return os.Chmod(path, info.Mode()|mask)
	})
}

// ownedBy reports whether dir already belongs to gid, setgid and with the group's
// read-write-search bits: the kubelet's check for fsGroupChangePolicy OnRootMismatch.
func ownedBy(dir string, gid int64) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	const perms = 0o660 | 0o110
	return ok && info.IsDir() && int64(st.Gid) == gid && info.Mode().Perm()&perms == perms && info.Mode()&fs.ModeSetgid != 0
}

// ensureOwnership gives a writable volume the pod mounts to its fsGroup: everything
// under it, unless fsGroupChangePolicy is OnRootMismatch and its root is already the
// group's (the kubelet's SetVolumeOwnership at each mount).
func ensureOwnership(pod *corev1.Pod, dir string) error {
	gid := fsGroupOf(pod)
	if gid == nil {
		return nil
	}
	if p := pod.Spec.SecurityContext.FSGroupChangePolicy; p != nil && *p == corev1.FSGroupChangeOnRootMismatch && ownedBy(dir, *gid) {
		return nil
	}
	return setOwnership(dir, *gid, false)
}

// fsUserOf is the one user every container of the pod runs as (runAsUser, the
// container's over the pod's), or nil when one has none or two differ: the kubelet's
// FsUserFrom, the owner of a projected token.
func fsUserOf(pod *corev1.Pod) *int64 {
	var contexts []*corev1.SecurityContext
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		contexts = append(contexts, c.SecurityContext)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		contexts = append(contexts, c.SecurityContext)
	}
	var user *int64
	for _, sc := range contexts {
		var uid *int64
		if sc != nil && sc.RunAsUser != nil {
			uid = sc.RunAsUser
		} else if psc := pod.Spec.SecurityContext; psc != nil {
			uid = psc.RunAsUser
		}
		if uid == nil || user != nil && *user != *uid {
			return nil
		}
		user = uid
	}
	return user
}
