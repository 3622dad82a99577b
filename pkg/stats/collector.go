// Package stats is minilet's resource usage collector, in the kubelet's Summary API
// types (k8s.io/kubelet/pkg/apis/stats/v1alpha1): the node's and every pod's and running
// container's CPU and memory (read from their cgroups with github.com/containerd/cgroups),
// each pod's network (from its sandbox's network namespace) and filesystem use (writable
// layers from containerd's snapshotter, logs, local volumes). It samples at a housekeeping
// interval, as cAdvisor does for the kubelet; readers get the latest sample, never a walk.
package stats

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// Runtime is what the collector asks of pkg/runtime.
type Runtime interface {
	ListContainers(ctx context.Context, podUID string) ([]runtime.Container, error)
	ContainerFsUsage(ctx context.Context, id string) (runtime.FsUsage, error)
	ImageFs(ctx context.Context) (runtime.FsInfo, error)
}

// The kubelet's cAdvisor intervals: CPU and memory every 10 s, disk usage walks every minute.
const (
	DefaultInterval   = 10 * time.Second
	DefaultFsInterval = time.Minute
)

// Config says what the collector looks at.
type Config struct {
	NodeName   string
	RootDir    string // --root-dir: the node filesystem (nodefs) is the one holding it
	PodsDir    string // ROOT/pods: pod volumes are PodsDir/UID/volumes/kubernetes.io~PLUGIN/NAME
	CgroupRoot string // --cgroup-root: ROOT/kubepods is the "pods" system container
	// NodeCgroup, when set, holds the whole node (a lab node's daemons and pods): the
	// node's CPU and memory are its usage, as a kubelet in a container sees its own root
	// cgroup; otherwise they are the machine's.
	NodeCgroup string
	Interval   time.Duration
	FsInterval time.Duration
}

// Snapshot is one sample.
type Snapshot struct {
	Summary statsapi.Summary
	// Containers describe the running containers of Summary.Pods, for /metrics/cadvisor's
	// labels.
	Containers []ContainerInfo
	// PodCgroups are the pods' cgroups by pod UID.
	PodCgroups map[string]string
}

// ContainerInfo names a container sampled.
type ContainerInfo struct {
	Namespace, Pod, Container, ID, Image, Cgroup string
}

// Collector samples usage every Interval.
type Collector struct {
	cfg  Config
	rt   Runtime
	cg   *cgroupReader
	proc procfs.FS

	mu   sync.RWMutex
	snap *Snapshot

	// Kept between samples, by whichever Sample holds sampling: the loop, or the
	// eviction manager woken by the kernel.
	sampling sync.Mutex
	prevCPU  map[string]cpuPoint // by cgroup path; "" is the node
	fs       map[string]fsUsage  // by container ID or volume directory
	lastFs   time.Time
	bootTime time.Time
}

type cpuPoint struct {
	nanos uint64
	at    time.Time
}

// New makes a collector; Run samples.
func New(cfg Config, rt Runtime) (*Collector, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.FsInterval <= 0 {
		cfg.FsInterval = DefaultFsInterval
	}
	proc, err := procfs.NewDefaultFS()
	if err != nil {
		return nil, err
	}
	c := &Collector{cfg: cfg, rt: rt, cg: newCgroupReader(), proc: proc,
		prevCPU: map[string]cpuPoint{}, fs: map[string]fsUsage{}}
	if st, err := proc.Stat(); err == nil {
		c.bootTime = time.Unix(int64(st.BootTime), 0)
	}
	return c, nil
}

// Run samples at once and then every Interval until ctx ends.
func (c *Collector) Run(ctx context.Context) {
	tick := time.NewTicker(c.cfg.Interval)
	defer tick.Stop()
	for {
		c.Sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Latest is the last sample; nil before the first.
func (c *Collector) Latest() *Snapshot {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.snap
}

// Sample takes one sample now and makes it the latest.
func (c *Collector) Sample(ctx context.Context) {
	c.sampling.Lock()
	defer c.sampling.Unlock()
	now := time.Now()
	walkFs := now.Sub(c.lastFs) >= c.cfg.FsInterval
	if walkFs {
		c.lastFs = now
	}
	snap := &Snapshot{Summary: statsapi.Summary{Node: c.nodeStats(ctx, now)}, PodCgroups: map[string]string{}}
	list, err := c.rt.ListContainers(ctx, "")
	if err != nil {
		slog.Warn("stats: listing containers", "err", err)
	}
	seen := map[string]bool{"": true, c.podsCgroup(): true} // the node's and the pods' own
	for _, pod := range groupPods(list) {
		ps, infos, cgroup := c.podStats(ctx, now, pod, walkFs, seen)
		snap.PodCgroups[ps.PodRef.UID] = cgroup
		snap.Summary.Pods = append(snap.Summary.Pods, ps)
		snap.Containers = append(snap.Containers, infos...)
	}
	// Forget what is gone, so the maps do not grow with every container ever run.
	for k := range c.prevCPU {
		if !seen[k] {
			delete(c.prevCPU, k)
		}
	}
	if walkFs {
		for k := range c.fs {
			if !seen[k] {
				delete(c.fs, k)
			}
		}
	}
	c.mu.Lock()
	c.snap = snap
	c.mu.Unlock()
}

// podContainers are one pod's running sandbox and running app containers (the newest
// run of each name).
type podContainers struct {
	sandbox runtime.Container
	apps    []runtime.Container
}

func groupPods(list []runtime.Container) []podContainers {
	byUID := map[string]*podContainers{}
	var order []string
	for _, c := range list {
		if c.State != runtime.StateRunning || c.PID == 0 {
			continue
		}
		p := byUID[c.PodUID]
		if p == nil {
			p = &podContainers{}
			byUID[c.PodUID] = p
			order = append(order, c.PodUID)
		}
		if c.Sandbox {
			p.sandbox = c
		} else {
			p.apps = append(p.apps, c)
		}
	}
	out := make([]podContainers, 0, len(order))
	for _, uid := range order {
		p := byUID[uid]
		if p.sandbox.ID == "" {
			continue // containers outliving their sandbox are on their way out
		}
		slices.SortFunc(p.apps, func(a, b runtime.Container) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b podContainers) int {
		return strings.Compare(a.sandbox.PodNamespace+"/"+a.sandbox.PodName, b.sandbox.PodNamespace+"/"+b.sandbox.PodName)
	})
	return out
}

func (c *Collector) podStats(ctx context.Context, now time.Time, pod podContainers, walkFs bool, seen map[string]bool) (statsapi.PodStats, []ContainerInfo, string) {
	sb := pod.sandbox
	t := metav1.NewTime(now)
	ps := statsapi.PodStats{
		PodRef:     statsapi.PodReference{Name: sb.PodName, Namespace: sb.PodNamespace, UID: sb.PodUID},
		StartTime:  metav1.NewTime(sb.StartedAt),
		Containers: []statsapi.ContainerStats{},
	}
	var infos []ContainerInfo
	var rootfsTotal, logsTotal fsUsage
	for _, ctr := range pod.apps {
		cs := statsapi.ContainerStats{Name: ctr.Name, StartTime: metav1.NewTime(ctr.StartedAt)}
		cgroup, err := c.cg.processCgroup(ctr.PID)
		if err == nil {
			seen[cgroup] = true
			if u, err := c.cg.read(cgroup); err == nil {
				cs.CPU, cs.Memory = c.cpuStats(cgroup, u, now), memoryStats(u, t, nil)
			}
		}
		seen[ctr.ID], seen[ctr.LogPath] = true, true
		// Disk usage is walked every FsInterval, and at once for what is new.
		if _, known := c.fs[ctr.ID]; walkFs || !known {
			if u, err := c.rt.ContainerFsUsage(ctx, ctr.ID); err == nil {
				c.fs[ctr.ID] = fsUsage{bytes: u.Bytes, inodes: u.Inodes}
			}
		}
		if _, known := c.fs[ctr.LogPath]; ctr.LogPath != "" && (walkFs || !known) {
			c.fs[ctr.LogPath] = diskUsage(filepath.Dir(ctr.LogPath))
		}
		if u, ok := c.fs[ctr.ID]; ok {
			cs.Rootfs = u.fsStats(t)
			rootfsTotal.add(u)
		}
		if u, ok := c.fs[ctr.LogPath]; ok && ctr.LogPath != "" {
			cs.Logs = u.fsStats(t)
			logsTotal.add(u)
		}
		ps.Containers = append(ps.Containers, cs)
		infos = append(infos, ContainerInfo{Namespace: sb.PodNamespace, Pod: sb.PodName, Container: ctr.Name, ID: ctr.ID, Image: ctr.Image, Cgroup: cgroup})
	}
	// The pod's cgroup holds its sandbox and containers; the sandbox's is one below it.
	var podCg string
	if cgroup, err := c.cg.processCgroup(sb.PID); err == nil {
		podCg = podCgroup(cgroup)
		seen[podCg] = true
		if u, err := c.cg.read(podCg); err == nil {
			ps.CPU, ps.Memory = c.cpuStats(podCg, u, now), memoryStats(u, t, nil)
			pids := u.pids
			ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: &pids}
		}
	}
	if nd, err := procfs.NewProc(int(sb.PID)); err == nil {
		if dev, err := nd.NetDev(); err == nil {
			ps.Network = networkStats(dev, t)
		}
	}
	volumes, volumesTotal := c.volumeStats(sb.PodUID, t, walkFs, seen)
	ps.VolumeStats = volumes
	ephemeral := rootfsTotal
	ephemeral.add(logsTotal)
	ephemeral.add(volumesTotal)
	ps.EphemeralStorage = ephemeral.fsStats(t)
	return ps, infos, podCg
}

// volumeStats are the pod's local volumes (emptyDir, configMap, secret, projected,
// downwardAPI) under PodsDir/UID/volumes, walked every FsInterval.
func (c *Collector) volumeStats(uid string, t metav1.Time, walkFs bool, seen map[string]bool) ([]statsapi.VolumeStats, fsUsage) {
	dirs, _ := filepath.Glob(filepath.Join(c.cfg.PodsDir, uid, "volumes", "*", "*"))
	var out []statsapi.VolumeStats
	var total fsUsage
	for _, dir := range dirs {
		seen[dir] = true
		if _, known := c.fs[dir]; walkFs || !known {
			c.fs[dir] = diskUsage(dir)
		}
		u, ok := c.fs[dir]
		if !ok {
			continue
		}
		total.add(u)
		out = append(out, statsapi.VolumeStats{Name: filepath.Base(dir), FsStats: *u.fsStats(t)})
	}
	return out, total
}

// cpuStats are u's CPU figures; the rate is over the time since the last sample of the
// same cgroup, absent on the first.
func (c *Collector) cpuStats(key string, u usage, now time.Time) *statsapi.CPUStats {
	total := u.cpuNanos
	st := &statsapi.CPUStats{Time: metav1.NewTime(now), UsageCoreNanoSeconds: &total}
	if prev, ok := c.prevCPU[key]; ok && now.After(prev.at) && total >= prev.nanos {
		rate := uint64(float64(total-prev.nanos) / now.Sub(prev.at).Seconds())
		st.UsageNanoCores = &rate
	}
	c.prevCPU[key] = cpuPoint{nanos: total, at: now}
	return st
}

func memoryStats(u usage, t metav1.Time, capacity *uint64) *statsapi.MemoryStats {
	m := &statsapi.MemoryStats{Time: t, UsageBytes: ptr(u.memoryUsage), WorkingSetBytes: ptr(u.workingSet),
		RSSBytes: ptr(u.rss), PageFaults: ptr(u.pageFaults), MajorPageFaults: ptr(u.majorPageFaults)}
	if capacity != nil {
		m.AvailableBytes = ptr(sub(*capacity, u.workingSet))
	}
	return m
}

func networkStats(dev procfs.NetDev, t metav1.Time) *statsapi.NetworkStats {
	n := &statsapi.NetworkStats{Time: t}
	names := make([]string, 0, len(dev))
	for name := range dev {
		if name != "lo" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		d := dev[name]
		n.Interfaces = append(n.Interfaces, statsapi.InterfaceStats{Name: name,
			RxBytes: ptr(d.RxBytes), RxErrors: ptr(d.RxErrors), TxBytes: ptr(d.TxBytes), TxErrors: ptr(d.TxErrors)})
	}
	// The default interface is eth0 where there is one (a pod's), as the kubelet's.
	for _, i := range n.Interfaces {
		if i.Name == "eth0" {
			n.InterfaceStats = i
			return n
		}
	}
	if len(n.Interfaces) > 0 {
		n.InterfaceStats = n.Interfaces[0]
	}
	return n
}

// nodeStats are the host's figures: CPU from /proc/stat, memory from /proc/meminfo (the
// root cgroup's usage and working set on either cgroup version) or both from NodeCgroup,
// minilet's network namespace, the filesystems of --root-dir and of containerd's
// snapshots, and PIDs.
func (c *Collector) nodeStats(ctx context.Context, now time.Time) statsapi.NodeStats {
	t := metav1.NewTime(now)
	ns := statsapi.NodeStats{NodeName: c.cfg.NodeName, StartTime: metav1.NewTime(c.bootTime)}
	mi, err := c.proc.Meminfo()
	if err != nil || mi.MemTotalBytes == nil || mi.MemFreeBytes == nil {
		mi = procfs.Meminfo{}
	}
	if c.cfg.NodeCgroup != "" {
		// Available memory stays capacity less working set: the capacity is the machine's,
		// or the node cgroup's limit where that is lower (minilab up --node-memory).
		if u, err := c.cg.read(c.cfg.NodeCgroup); err == nil {
			capacity := mi.MemTotalBytes
			if capacity != nil && u.memoryLimit > 0 && u.memoryLimit < *capacity {
				capacity = &u.memoryLimit
			}
			ns.CPU, ns.Memory = c.cpuStats("", u, now), memoryStats(u, t, capacity)
		} else {
			slog.Warn("stats: reading the node's cgroup (--node-cgroup)", "err", err)
		}
	} else {
		if st, err := c.proc.Stat(); err == nil {
			cpu := st.CPUTotal
			seconds := cpu.User + cpu.Nice + cpu.System + cpu.IRQ + cpu.SoftIRQ + cpu.Steal
			ns.CPU = c.cpuStats("", usage{cpuNanos: uint64(seconds * 1e9)}, now)
		}
		if mi.MemTotalBytes != nil {
			u := usage{memoryUsage: sub(*mi.MemTotalBytes, *mi.MemFreeBytes)}
			if mi.InactiveFileBytes != nil {
				u.workingSet = sub(u.memoryUsage, *mi.InactiveFileBytes)
			}
			if mi.AnonPagesBytes != nil {
				u.rss = *mi.AnonPagesBytes
			}
			ns.Memory = memoryStats(u, t, mi.MemTotalBytes)
		}
	}
	if self, err := c.proc.Self(); err == nil {
		if dev, err := self.NetDev(); err == nil {
			ns.Network = networkStats(dev, t)
		}
	}
	if fs, err := runtime.StatFs(c.cfg.RootDir); err == nil {
		ns.Fs = fsInfoStats(fs, t)
	}
	if fs, err := c.rt.ImageFs(ctx); err == nil {
		ns.Runtime = &statsapi.RuntimeStats{ImageFs: fsInfoStats(fs, t)}
	}
	var info unix.Sysinfo_t
	if data, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil && unix.Sysinfo(&info) == nil {
		if maxPID, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil {
			procs := int64(info.Procs)
			ns.Rlimit = &statsapi.RlimitStats{Time: t, MaxPID: &maxPID, NumOfRunningProcesses: &procs}
		}
	}
	if pods := c.podsCgroup(); pods != "" {
		if u, err := c.cg.read(pods); err == nil {
			ns.SystemContainers = append(ns.SystemContainers, statsapi.ContainerStats{Name: statsapi.SystemContainerPods,
				StartTime: ns.StartTime, CPU: c.cpuStats(pods, u, now), Memory: memoryStats(u, t, nil)})
		}
	}
	return ns
}

// podsCgroup is ROOT/kubepods, the cgroup all pods are under ("" without a cgroup root).
func (c *Collector) podsCgroup() string {
	if c.cfg.CgroupRoot == "" {
		return ""
	}
	return filepath.Join("/", c.cfg.CgroupRoot, "kubepods")
}

func fsInfoStats(fs runtime.FsInfo, t metav1.Time) *statsapi.FsStats {
	return &statsapi.FsStats{Time: t, AvailableBytes: ptr(fs.Available), CapacityBytes: ptr(fs.Capacity), UsedBytes: ptr(fs.Used),
		InodesFree: ptr(fs.InodesFree), Inodes: ptr(fs.Inodes), InodesUsed: ptr(fs.InodesUsed)}
}

func ptr[T any](v T) *T { return &v }
