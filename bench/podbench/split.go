package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's CPU times.
const clockTicks = 100

// cpuSplit is who spent a burst's CPU: minilet itself, the processes it ran and reaped
// (CNI plugins), containerd, the lab's shims with the runc runs they reaped, and the
// host's total busy time (the rest is miniapi, the kernel's own threads, other load).
type cpuSplit struct {
	minilet, cni, containerd, shims, host time.Duration
}

// readSplit reads the split so far; shims are the lab containerd's shim processes alive now.
func readSplit(l *lab.Lab, minilet, containerd int) (cpuSplit, error) {
	var s cpuSplit
	var err error
	if s.minilet, s.cni, err = selfAndChildren(minilet); err != nil {
		return s, err
	}
	if s.containerd, _, err = selfAndChildren(containerd); err != nil {
		return s, err
	}
	socket := cluster.ContainerdSocket(l)
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !strings.Contains(string(cmd), "containerd-shim") || !strings.Contains(string(cmd), socket) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		self, children, err := selfAndChildren(pid)
		if err == nil {
			s.shims += self + children
		}
	}
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, err
	}
	f := strings.Fields(strings.SplitN(string(data), "\n", 2)[0])
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
		v, _ := strconv.ParseUint(f[i], 10, 64)
		s.host += time.Duration(v) * time.Second / clockTicks
	}
	return s, nil
}

// selfAndChildren are a process's CPU time (user and system) and that of the children it reaped.
func selfAndChildren(pid int) (self, children time.Duration, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command name (which may hold spaces) start after the last ')'.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	var t [4]time.Duration
	for i := range t {
		v, err := strconv.ParseUint(f[11+i], 10, 64) // utime stime cutime cstime
		if err != nil {
			return 0, 0, fmt.Errorf("parse /proc/%d/stat", pid)
		}
		t[i] = time.Duration(v) * time.Second / clockTicks
	}
	return t[0] + t[1], t[2] + t[3], nil
}

// printSplit prints the CPU per pod of each part between two readings. The shims of the
// burst's pods are all alive at the end and none before, so their whole CPU counts.
func printSplit(before, after cpuSplit, pods int) {
	per := func(d time.Duration) string { return (d / time.Duration(pods)).Round(100 * time.Microsecond).String() }
	host := after.host - before.host
	known := (after.minilet - before.minilet) + (after.cni - before.cni) + (after.containerd - before.containerd) + after.shims
	fmt.Printf("CPU per pod over the burst: host %s = minilet %s + CNI plugins %s + containerd %s + shims and runc %s + the rest (miniapi, kernel threads, other load) %s\n",
		per(host), per(after.minilet-before.minilet), per(after.cni-before.cni), per(after.containerd-before.containerd), per(after.shims), per(host-known))
}

// printSteps sums minilet's "Observed pod startup duration" lines of the pods named
// prefix-*: the p50 and p99 of each step of their start.
func printSteps(l *lab.Lab, node, prefix string) error {
	f, err := os.Open(filepath.Join(l.StateDir, "logs", "minilet-"+node+".log"))
	if err != nil {
		return err
	}
	defer f.Close()
	steps := map[string][]time.Duration{}
	var order []string
	throttled := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "due to client-side throttling") {
			throttled++ // client-go logs waits over 1 s, at most one line in 10 s
		}
		if !strings.Contains(line, `msg="Observed pod startup duration"`) || !strings.Contains(line, " pod=default/"+prefix+"-") {
			continue
		}
		for _, kv := range strings.Fields(line) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "time" || k == "seen" {
				continue
			}
			d, err := time.ParseDuration(v)
			if err != nil {
				continue
			}
			if _, seen := steps[k]; !seen {
				order = append(order, k)
			}
			steps[k] = append(steps[k], d)
		}
	}
	if throttled > 0 {
		fmt.Printf("minilet's log reports %d waits of over 1 s for its API client's rate limit\n", throttled)
	}
	if len(order) == 0 {
		fmt.Println("minilet logged no start steps (a build without them)")
		return sc.Err()
	}
	fmt.Printf("minilet's start steps (pods handed to their worker -> Running written), p50 / p99 / mean:\n")
	for _, k := range order {
		d := steps[k]
		slices.Sort(d)
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		pct := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
		fmt.Printf("  %-14s %8s %8s %8s  (%d pods)\n", k, pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond),
			(sum / time.Duration(len(d))).Round(time.Millisecond), len(d))
	}
	return sc.Err()
}
