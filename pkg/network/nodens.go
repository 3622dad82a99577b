package network

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// initNetNSInode is the kernel's fixed inode number of the initial network namespace, the
// host's (PROC_NET_INIT_INO in include/linux/proc_ns.h). Reading /proc/1/ns/net instead
// needs ptrace access to PID 1, which a sandboxed root may lack.
const initNetNSInode = 0xEFFFFFF9

// BindCurrentNetNS bind-mounts the calling thread's network namespace at dir/name and
// tells whether that namespace is the host's (the initial one). minilet binds its own namespace,
// the node's, this way so hostNetwork pods can join it by path: a container left without
// a network namespace of its own would inherit the container runtime's, which in a lab is
// the host's, not the node's. A file left there by a mount that is gone (after a reboot)
// or that holds another namespace is replaced; the right one already there is kept.
func BindCurrentNetNS(dir, name string) (path string, isHost bool, err error) {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return "", false, fmt.Errorf("network namespace name %q is not a plain file name", name)
	}
	runtime.LockOSThread() // the thread's namespace, whichever goroutine is asking
	defer runtime.UnlockOSThread()
	self := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
	var st unix.Stat_t
	if err := unix.Stat(self, &st); err != nil {
		return "", false, fmt.Errorf("stat %s: %w", self, err)
	}
	isHost = st.Ino == initNetNSInode
	if err := makeSharedDir(dir); err != nil {
		return "", false, err
	}
	path = filepath.Join(dir, name)
	if IsNetNS(path) {
		if same, err := sameFile(path, self); err == nil && same {
			return path, isHost, nil
		}
	}
	if err := RemoveNetNS(path); err != nil { // a stale file, or another namespace
		return "", false, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return "", false, fmt.Errorf("create network namespace mount point %s: %w", path, err)
	}
	f.Close()
	if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
		os.Remove(path)
		return "", false, fmt.Errorf("bind-mount %s at %s: %w", self, path, err)
	}
	return path, isHost, nil
}

// RemoveBoundNetNS undoes BindCurrentNetNS: it unmounts and removes dir/name, then
// unmounts dir (made a shared mount point of its own). Missing pieces are not an error.
func RemoveBoundNetNS(dir, name string) error {
	if err := RemoveNetNS(filepath.Join(dir, name)); err != nil {
		return err
	}
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	return nil
}

// sameFile tells whether a and b are the same inode of the same device (for nsfs: the
// same namespace).
func sameFile(a, b string) (bool, error) {
	var sa, sb unix.Stat_t
	if err := unix.Stat(a, &sa); err != nil {
		return false, fmt.Errorf("stat %s: %w", a, err)
	}
	if err := unix.Stat(b, &sb); err != nil {
		return false, fmt.Errorf("stat %s: %w", b, err)
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
}
