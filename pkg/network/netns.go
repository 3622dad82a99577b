// Package network gives a node its pod networking: network namespaces bind-mounted at a path
// (NewNetNS, RemoveNetNS, InNetNS), pod interfaces through CNI with the standard plugins
// (NewCNI, CNI.SetUp, CNI.Check, CNI.TearDown) and the routes to other nodes' pod CIDRs it
// owns (SyncPodRoutes). Its sub-packages: cniconf (the conflist), vxlan (the overlay
// device), masq (egress masquerade), nodenet (minilet's controller tying them to the Node
// objects), inspect (`minilet network`).
//
// Everything acts on the network namespace of the calling process (or, inside InNetNS, of
// the calling thread): a minilet running in a lab node's namespace wires that node only.
package network

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// sharedDirMu serialises making a netns directory a shared mount, so two concurrent first
// calls do not stack two bind mounts on it.
var sharedDirMu sync.Mutex

// NewNetNS creates a network namespace and bind-mounts it at dir/name, returning that path.
// Like iproute2 does for /run/netns, dir is made a shared mount point first so the bind
// mounts propagate to mount namespaces that are peers of ours.
func NewNetNS(dir, name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return "", fmt.Errorf("network namespace name %q is not a plain file name", name)
	}
	if err := makeSharedDir(dir); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if err := removeStale(path); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("network namespace %s already exists", path)
		}
		return "", fmt.Errorf("create network namespace mount point %s: %w", path, err)
	}
	f.Close()

	err = onSwitchedThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare network namespace: %w", err)
		}
		return nil
	}, func() error {
		self := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
		if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind-mount %s: %w", self, err)
		}
		return nil
	})
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("create network namespace %s: %w", path, err)
	}
	return path, nil
}

// IsNetNS reports whether path holds a network namespace (a bind mount of nsfs). After a
// reboot the mount points under a persistent directory are plain empty files.
func IsNetNS(path string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(path, &fs) == nil && int64(fs.Type) == unix.NSFS_MAGIC
}

// removeStale removes a file left at path by a namespace that no longer exists (its
// mount went with a reboot), so the name can be used again.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && (fi.IsDir() || IsNetNS(path))) {
		return nil // nothing there, or something NewNetNS must not touch
	}
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale network namespace file %s: %w", path, err)
	}
	return nil
}

// makeSharedDir makes dir a mount point with shared propagation, bind-mounting it onto itself
// when it is not a mount point yet (what `ip netns add` does for /run/netns).
func makeSharedDir(dir string) error {
	sharedDirMu.Lock()
	defer sharedDirMu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create network namespace directory %s: %w", dir, err)
	}
	err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) { // not a mount point yet
		if err := unix.Mount(dir, dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mount network namespace directory %s onto itself: %w", dir, err)
		}
		err = unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, "")
	}
	if err != nil {
		return fmt.Errorf("make network namespace directory %s a shared mount: %w", dir, err)
	}
	return nil
}

// RemoveNetNS unmounts and removes a namespace made by NewNetNS. The kernel frees the
// namespace once no process or mount holds it. Removing a missing namespace is not an error.
func RemoveNetNS(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove network namespace %s: %w", path, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("remove network namespace %s: it is a directory, not a namespace", path)
	}
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount network namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove network namespace %s: %w", path, err)
	}
	return nil
}

// InNetNS runs fn on a fresh goroutine whose OS thread is switched into the network namespace
// at path; sockets fn opens and processes it starts belong to that namespace. Only that one
// thread is switched, so fn must not hand namespace-sensitive work to other goroutines.
func InNetNS(path string, fn func() error) error {
	target, err := netns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("open network namespace %s: %w", path, err)
	}
	defer target.Close()

	return onSwitchedThread(func() error {
		if err := netns.Set(target); err != nil {
			return fmt.Errorf("enter network namespace %s: %w", path, err)
		}
		return nil
	}, fn)
}

// onSwitchedThread runs fn on a fresh goroutine locked to its OS thread after enter has
// switched that thread into another network namespace, then switches it back. Switching back
// rather than letting Go discard the thread matters: Go cannot discard the main thread, which
// would then sit in the other namespace for good (and /proc/PID/ns/net would show it as the
// process's). A thread that cannot switch back stays locked, so it is never reused.
func onSwitchedThread(enter, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := enter(); err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		fnErr := fn()
		if err := netns.Set(orig); err != nil {
			errc <- errors.Join(fnErr, fmt.Errorf("return to the original network namespace: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- fnErr
	}()
	return <-errc
}
