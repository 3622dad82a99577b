package network

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ReleaseOrphanedIPs frees the host-local allocations (ipamDataDir/NetworkName/IP, first
// line the sandbox's container ID) of sandboxes that no longer exist: after a crash or a
// reboot nothing runs CNI DEL for them, and the pod range would fill up. It holds
// host-local's own lock throughout and asks which sandboxes exist only after reading the
// allocations, so an allocation made meanwhile is never taken for an orphan. It returns
// the addresses freed.
func ReleaseOrphanedIPs(ipamDataDir string, sandboxes func() (map[string]bool, error)) ([]string, error) {
	dir := filepath.Join(ipamDataDir, NetworkName)
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDONLY|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no pod was ever wired on this node
	}
	if err != nil {
		return nil, fmt.Errorf("host-local lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)

	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read host-local allocations: %w", err)
	}
	owners := map[string]string{} // IP file -> sandbox ID
	for _, e := range entries {
		if net.ParseIP(e.Name()) == nil {
			continue // the lock and last_reserved_ip files
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read host-local allocation %s: %w", e.Name(), err)
		}
		id, _, _ := strings.Cut(string(data), "\n")
		owners[e.Name()] = strings.TrimSpace(id)
	}
	live, err := sandboxes()
	if err != nil {
		return nil, err
	}
	var freed []string
	for ip, id := range owners {
		if live[id] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, ip)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return freed, fmt.Errorf("free address %s of gone sandbox %s: %w", ip, id, err)
		}
		freed = append(freed, ip)
	}
	return freed, nil
}
