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

	"github.com/minik8s/minik8s/bench/internal/proc"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

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
	if s.minilet, s.cni, err = proc.SelfAndChildren(minilet); err != nil {
		return s, err
	}
	if s.containerd, _, err = proc.SelfAndChildren(containerd); err != nil {
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
		self, children, err := proc.SelfAndChildren(pid)
		if err == nil {
			s.shims += self + children
		}
	}
	s.host, _, err = proc.HostCPU()
	return s, err
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
