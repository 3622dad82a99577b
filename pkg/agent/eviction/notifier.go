package eviction

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// memoryCgroupV1 is where the v1 memory hierarchy is mounted; the kernel's usage
// threshold notifications (cgroup.event_control) exist only there, so on a v2 host the
// manager goes without them, as the kubelet does.
const memoryCgroupV1 = "/sys/fs/cgroup/memory"

// errNoNotifications: the host's memory cgroup has no usage threshold notifications (v2).
var errNoNotifications = errors.New("memory usage threshold notifications need the cgroup v1 memory controller")

// usageNotifier is the kernel telling, through an eventfd registered on a memory
// cgroup's memory.usage_in_bytes, that the cgroup's usage crossed a threshold: the
// kubelet's memory threshold notifier, which wakes the eviction manager at once instead
// of at its next sample.
type usageNotifier struct {
	event *os.File // the eventfd, in Go's poller so that Close ends a Wait
}

// notifyUsage registers threshold (bytes) on cgroup, a path in the memory hierarchy
// ("/" the root).
func notifyUsage(cgroup string, threshold int64) (*usageNotifier, error) {
	dir := filepath.Join(memoryCgroupV1, cgroup)
	control, err := os.OpenFile(filepath.Join(dir, "cgroup.event_control"), os.O_WRONLY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errNoNotifications
		}
		return nil, err
	}
	defer control.Close()
	usage, err := os.Open(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		return nil, err
	}
	defer usage.Close() // the registration holds its own reference
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	event := os.NewFile(uintptr(efd), "memory-threshold-eventfd")
	if _, err := fmt.Fprintf(control, "%d %d %d", efd, usage.Fd(), threshold); err != nil {
		event.Close()
		return nil, fmt.Errorf("register a memory threshold on %s: %w", dir, err)
	}
	return &usageNotifier{event: event}, nil
}

// Wait returns once usage crossed the threshold (either way), or with an error once
// the notifier is closed.
func (n *usageNotifier) Wait() error {
	var buf [8]byte
	_, err := n.event.Read(buf[:])
	return err
}

// Close ends a Wait; closing the eventfd also unregisters the threshold.
func (n *usageNotifier) Close() error { return n.event.Close() }
