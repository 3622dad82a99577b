package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/moby/sys/mountinfo"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// destroyGrace is how long Destroy lets lab processes exit after SIGTERM.
const destroyGrace = 10 * time.Second

// rescanPause separates Destroy's scans for lab processes.
const rescanPause = 50 * time.Millisecond

// Destroy removes lab name: it stops its processes, unmounts everything under its
// directories (pod namespaces, container root filesystems), deletes its links and
// namespaces and removes its directories. It works from what is on the host, not only from
// lab.json, so it also cleans up after a crash; destroying a missing lab does nothing.
//
// Lab processes are the recorded ones, every process inside a lab namespace or pod namespace
// mounted under the lab, and every process whose arguments name a lab namespace (nsenter or
// `ip netns exec` before they switch) or a lab directory (containerd and its shims, say).
func Destroy(name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	l := describe(Spec{Name: name})
	var errs []error
	var procs []ProcessRecord
	if loaded, err := Load(name); err == nil {
		procs = loaded.Processes
	} else if !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err) // a corrupt lab.json: go on with what the host shows
	}
	namespaces, err := labNetNS(name)
	if err != nil {
		return err
	}
	// Scan again after each round: a dying daemon may just have started another process, and
	// one being started (mid-exec, not yet in its namespace) can slip past one scan. Only two
	// empty scans in a row, a moment apart, mean nothing is left.
	for round, empty := 0, 0; round < 5 && empty < 2; round++ {
		found, err := labProcesses(l, namespaces)
		if err != nil {
			errs = append(errs, err)
		}
		if len(procs)+len(found) == 0 {
			empty++
			time.Sleep(rescanPause)
			continue
		}
		empty = 0
		if err := terminate(append(procs, found...), destroyGrace); err != nil {
			errs = append(errs, fmt.Errorf("destroy lab %q: %w", name, err))
			break
		}
		procs = nil
	}

	for _, ns := range namespaces {
		if switchPattern(name).MatchString(ns) {
			if err := unplugAll(ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, ns := range namespaces {
		if err := network.RemoveNetNS(NetNSPath(ns)); err != nil {
			errs = append(errs, err)
		}
	}
	for _, dir := range []string{l.RunDir, l.StateDir} {
		if err := unmountAll(dir); err != nil {
			errs = append(errs, err) // never RemoveAll across a mount: it would delete inside it
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// labProcesses finds the processes of lab l that run now, whether recorded or not.
func labProcesses(l *Lab, namespaces []string) ([]ProcessRecord, error) {
	inodes := map[uint64]bool{}
	paths := []string{}
	for _, ns := range namespaces {
		paths = append(paths, NetNSPath(ns))
	}
	for _, dir := range []string{l.RunDir, l.StateDir} {
		mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
		if err != nil {
			return nil, fmt.Errorf("read mounts: %w", err)
		}
		for _, m := range mounts {
			if m.FSType == "nsfs" {
				paths = append(paths, m.Mountpoint)
			}
		}
	}
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err == nil {
			inodes[st.Ino] = true
		}
	}

	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var procs []ProcessRecord
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if !inNetNS(pid, inodes) && !namesLab(pid, l) {
			continue
		}
		if start, _, err := procStat(pid); err == nil {
			procs = append(procs, ProcessRecord{Name: "pid " + e.Name(), PID: pid, StartTime: start})
		}
	}
	return procs, nil
}

// inNetNS tells whether pid's network namespace is one of inodes.
func inNetNS(pid int, inodes map[uint64]bool) bool {
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)) // "net:[4026532281]"
	if err != nil {
		return false
	}
	ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "net:["), "]"), 10, 64)
	return err == nil && inodes[ino]
}

// namesLab tells whether one of pid's arguments names a namespace of lab l (alone, or as a
// path such as --net=/run/netns/mk-NAME-node-1) or one of its directories or a path inside
// one (alone or as a flag value: --root=DIR/x).
func namesLab(pid int, l *Lab) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	nsName := netnsPattern(l.Name)
	for _, arg := range strings.Split(string(raw), "\x00") {
		if nsName.MatchString(arg) || (strings.Contains(arg, NetNSDir+"/") && nsName.MatchString(filepath.Base(arg))) {
			return true
		}
		for _, dir := range []string{l.RunDir, l.StateDir} {
			if strings.Contains(arg, dir+"/") || arg == dir || strings.HasSuffix(arg, "="+dir) {
				return true
			}
		}
	}
	return false
}

// unplugAll deletes the veth pairs on the lab switch, so the cabling goes even if some
// process we could not find still holds a member namespace.
func unplugAll(switchNetNS string) error {
	fd, err := netns.GetFromPath(NetNSPath(switchNetNS))
	if err != nil {
		return fmt.Errorf("open %s: %w", switchNetNS, err)
	}
	defer fd.Close()
	h, err := netlink.NewHandleAt(fd)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", switchNetNS, err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return fmt.Errorf("list links in %s: %w", switchNetNS, err)
	}
	var errs []error
	for _, link := range links {
		if link.Type() == "veth" {
			if err := h.LinkDel(link); err != nil {
				errs = append(errs, fmt.Errorf("delete %s in %s: %w", link.Attrs().Name, switchNetNS, err))
			}
		}
	}
	return errors.Join(errs...)
}

// unmountAll lazily unmounts every mount at or below dir, deepest first, until none is left.
func unmountAll(dir string) error {
	for range 10 {
		mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
		if err != nil {
			return fmt.Errorf("read mounts: %w", err)
		}
		if len(mounts) == 0 {
			return nil
		}
		slices.SortFunc(mounts, func(a, b *mountinfo.Info) int { return len(b.Mountpoint) - len(a.Mountpoint) })
		for _, m := range mounts {
			if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("unmount %s: %w", m.Mountpoint, err)
			}
		}
	}
	return fmt.Errorf("mounts under %s keep coming back; not removing it", dir)
}

// Sweep destroys the labs whose recorded processes have all died, as a crashed minilab or
// test leaves them, and returns their names. Labs that never started a process are left
// alone: their creator may still be setting them up.
func Sweep() ([]string, error) {
	entries, err := os.ReadDir(StateRoot)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list labs: %w", err)
	}
	var swept []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || ValidateName(e.Name()) != nil {
			continue
		}
		l, err := Load(e.Name())
		if err != nil || len(l.Processes) == 0 || slices.ContainsFunc(l.Processes, func(p ProcessRecord) bool { return alive(p.PID, p.StartTime) }) {
			continue
		}
		if err := Destroy(l.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		swept = append(swept, l.Name)
	}
	return swept, errors.Join(errs...)
}
