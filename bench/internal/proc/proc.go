// Package proc reads what benchmarks print about a process: CPU use and RSS from /proc,
// and the PIDs of a lab's daemons.
package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's CPU times.
const clockTicks = 100

// CPUShare is the process's CPU time over window divided by window: 1.0 is one core.
func CPUShare(pid int, window time.Duration) (float64, error) {
	user, system, err := CPUShares(pid, window)
	return user + system, err
}

// CPUShares is the process's user and system CPU time over window, each divided by window.
func CPUShares(pid int, window time.Duration) (user, system float64, err error) {
	u0, s0, err := CPUTimes(pid)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	time.Sleep(window)
	u1, s1, err := CPUTimes(pid)
	if err != nil {
		return 0, 0, err
	}
	wall := time.Since(start).Seconds()
	return (u1 - u0).Seconds() / wall, (s1 - s0).Seconds() / wall, nil
}

// CPUTime is the process's CPU time so far (user and system).
func CPUTime(pid int) (time.Duration, error) {
	user, system, err := CPUTimes(pid)
	return user + system, err
}

// CPUTimes is the process's user and system CPU time so far: system time is the kernel's
// work in its system calls (and the softirqs run in them).
func CPUTimes(pid int) (user, system time.Duration, err error) {
	t, err := statTimes(pid)
	return t[0], t[1], err
}

// RunTime is the CPU time the process's threads have run so far, in nanoseconds
// (/proc/PID/task/*/schedstat), not /proc/PID/stat's 10 ms ticks: for spans of a few ticks,
// as one garbage collection. Threads that have exited are not counted (Go's seldom exit);
// no process is 0.
func RunTime(pid int) time.Duration {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum time.Duration
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if fields := strings.Fields(string(data)); len(fields) > 0 {
			ns, _ := strconv.ParseInt(fields[0], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// SelfAndChildren are the process's CPU time so far (user and system) and that of the
// children it has waited for.
func SelfAndChildren(pid int) (self, children time.Duration, err error) {
	t, err := statTimes(pid)
	return t[0] + t[1], t[2] + t[3], err
}

// statTimes are the CPU times of /proc/PID/stat: utime, stime, cutime and cstime.
func statTimes(pid int) ([4]time.Duration, error) {
	var t [4]time.Duration
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return t, err
	}
	// Fields after the command name (which may hold spaces) start after the last ')'.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(fields) < 15 {
		return t, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	for i := range t {
		v, err := strconv.ParseUint(fields[11+i], 10, 64)
		if err != nil {
			return [4]time.Duration{}, fmt.Errorf("parse /proc/%d/stat", pid)
		}
		t[i] = time.Duration(v) * time.Second / clockTicks
	}
	return t, nil
}

// RSSMiB is the process's resident set size.
func RSSMiB(pid int) (float64, error) { return statusMiB(pid, "VmRSS") }

// PeakRSSMiB is the process's peak resident set size (VmHWM).
func PeakRSSMiB(pid int) (float64, error) { return statusMiB(pid, "VmHWM") }

// RSSParts are the anonymous (heap, stacks) and file-backed (the binary's pages) parts of
// the process's resident set.
func RSSParts(pid int) (anon, file float64, err error) {
	if anon, err = statusMiB(pid, "RssAnon"); err != nil {
		return 0, 0, err
	}
	file, err = statusMiB(pid, "RssFile")
	return anon, file, err
}

// statusMiB is a field of /proc/PID/status given in kB, in MiB.
func statusMiB(pid int, field string) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// LabPID is the PID of the lab's process called name (minilet-node-1, miniapi, ...).
func LabPID(l *lab.Lab, name string) (int, error) {
	fresh, err := lab.Load(l.Name)
	if err != nil {
		return 0, err
	}
	for _, p := range fresh.Processes {
		if p.Name == name {
			return p.PID, nil
		}
	}
	return 0, fmt.Errorf("no process %s in lab %s (%s)", name, l.Name, filepath.Join(lab.StateRoot, l.Name))
}

// NodePIDs are the PIDs of the minilet of the lab's first node and of the lab's
// containerd: what the node benchmarks measure.
func NodePIDs(l *lab.Lab) (minilet, containerd int, err error) {
	if minilet, err = LabPID(l, "minilet-"+l.Nodes[0].Name); err != nil {
		return 0, 0, err
	}
	containerd, err = LabPID(l, "containerd")
	return minilet, containerd, err
}

// HostCPU is the CPU time the whole host has spent busy (user, system, interrupts), and
// how many CPUs it has.
func HostCPU() (time.Duration, int, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	var busy uint64
	cpus := 0
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 8 && f[0] == "cpu":
			for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
				v, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					return 0, 0, fmt.Errorf("parse /proc/stat: %w", err)
				}
				busy += v
			}
		case len(f) > 0 && strings.HasPrefix(f[0], "cpu"):
			cpus++
		}
	}
	return time.Duration(busy) * time.Second / clockTicks, cpus, nil
}

// Mapping is the resident memory of one kind of mapping of a process: a file's mappings of
// one permission set ("r-xp /path/bin"), or "anonymous" for heap, stacks and the rest.
type Mapping struct {
	Name string
	MiB  float64
}

// RSSByMapping sums the process's resident pages (/proc/PID/smaps) per kind of mapping,
// largest first (then by name).
func RSSByMapping(pid int) ([]Mapping, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return nil, err
	}
	return sumSmaps(string(data)), nil
}

// sumSmaps sums the Rss lines of smaps text per mapping kind.
func sumSmaps(smaps string) []Mapping {
	kb := map[string]float64{}
	name := "anonymous"
	for _, line := range strings.Split(smaps, "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			name = "anonymous"
			if len(fields) >= 6 && strings.HasPrefix(fields[5], "/") {
				name = fields[1] + " " + fields[5]
			}
			continue
		}
		if len(fields) == 3 && fields[0] == "Rss:" {
			v, _ := strconv.ParseFloat(fields[1], 64)
			kb[name] += v
		}
	}
	var out []Mapping
	for n, v := range kb {
		out = append(out, Mapping{n, v / 1024})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].MiB != out[j].MiB {
			return out[i].MiB > out[j].MiB
		}
		return out[i].Name < out[j].Name
	})
	return out
}
