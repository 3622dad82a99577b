// Package cm is minilet's container manager for resources, after the kubelet's: each pod
// gets a cgroup in the kubelet's cgroupfs layout under the cgroup root
// (ROOT/kubepods/pod<UID> for Guaranteed pods, ROOT/kubepods/burstable/pod<UID> and
// ROOT/kubepods/besteffort/pod<UID> for the others), each container one below it, with
// CPU shares from requests, a CFS quota and a memory limit from limits, and an OOM score
// ranked by QoS class.
package cm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/qos"
)

// The kubelet's constants.
const (
	cfsPeriod = 100000 // microseconds
	minShares = 2
	// MinShares and MinMilliCPULimit are the smallest CPU request and limit a cgroup
	// holds (the kubelet's cm.MinShares and MinMilliCPULimit).
	MinShares        = minShares
	MinMilliCPULimit = minQuota * 1000 / cfsPeriod
	minQuota         = 1000
	sharesPerCPU     = 1024
	// SandboxOOMScoreAdj keeps the pause container, which holds the pod's namespaces,
	// the last thing the OOM killer picks in a pod.
	SandboxOOMScoreAdj    = -998
	guaranteedOOMScoreAdj = -997
	bestEffortOOMScoreAdj = 1000
)

// PodCgroup is the cgroup path (cgroupfs, relative to each hierarchy's root) of a pod.
func PodCgroup(root string, pod *corev1.Pod) string {
	parent := filepath.Join(root, "kubepods")
	switch qos.Class(pod) {
	case corev1.PodQOSBurstable:
		parent = filepath.Join(parent, "burstable")
	case corev1.PodQOSBestEffort:
		parent = filepath.Join(parent, "besteffort")
	}
	return filepath.Join(parent, "pod"+string(pod.UID))
}

// ContainerResources are a container's cgroup settings: CPU shares from its request
// (2 without one), a CFS quota from its CPU limit, and a memory limit; a limit the
// container does not set is its pod's pod-level one (podLevel, nil: none), as the
// kubelet's getCPULimit and getMemoryLimit. The pids limit is the pod's (EnsurePodCgroup).
func ContainerResources(podLevel *corev1.ResourceRequirements, c *corev1.Container) *specs.LinuxResources {
	r := &specs.LinuxResources{CPU: &specs.LinuxCPU{}}
	cpuReq := c.Resources.Requests.Cpu()
	limits := ContainerLimits(podLevel, c)
	shares := uint64(minShares)
	if m := cpuReq.MilliValue(); m > 0 {
		shares = max(uint64(m)*sharesPerCPU/1000, minShares)
	} else if m := c.Resources.Limits.Cpu().MilliValue(); m > 0 { // the API defaults requests to limits; be safe
		shares = max(uint64(m)*sharesPerCPU/1000, minShares)
	}
	r.CPU.Shares = &shares
	if m := limits.Cpu().MilliValue(); m > 0 {
		quota, period := max(m*cfsPeriod/1000, minQuota), uint64(cfsPeriod)
		r.CPU.Quota, r.CPU.Period = &quota, &period
	}
	if mem := limits.Memory().Value(); mem > 0 {
		r.Memory = &specs.LinuxMemory{Limit: &mem}
	}
	return r
}

// ContainerLimits are c's limits, with its pod's pod-level CPU and memory limits
// (podLevel, nil: none) for those it does not set, as the kubelet's GetLimits.
func ContainerLimits(podLevel *corev1.ResourceRequirements, c *corev1.Container) corev1.ResourceList {
	out := c.Resources.Limits.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	if podLevel == nil {
		return out
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if pod := podLevel.Limits.Name(name, ""); out.Name(name, "").IsZero() && !pod.IsZero() {
			out[name] = pod.DeepCopy()
		}
	}
	return out
}

// OOMScoreAdj ranks a container for the OOM killer as the kubelet does: Guaranteed pods
// last, BestEffort first, Burstable by how much of the node's memory it requested.
func OOMScoreAdj(pod *corev1.Pod, c *corev1.Container, nodeMemory int64) int {
	switch qos.Class(pod) {
	case corev1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		return bestEffortOOMScoreAdj
	}
	if nodeMemory <= 0 {
		return 999
	}
	adj := 1000 - int(1000*c.Resources.Requests.Memory().Value()/nodeMemory)
	switch {
	case adj < 2:
		return 2 // above Guaranteed pods and the system
	case adj >= 1000:
		return 999 // below BestEffort pods
	}
	return adj
}

// cgroupMounts are where the cgroup hierarchies are: the v2 unified one, or each v1
// controller's (this host's hybrid layout has both; runc uses v1 controllers there).
func cgroupMounts() []string { return hierarchiesUnder("/sys/fs/cgroup") }

// hierarchiesUnder lists the hierarchies mounted at base: base itself on a v2-only host
// (its entries are control files and child cgroups, not hierarchies), else its
// directories (v1 controllers, and v2's "unified" on a hybrid host).
func hierarchiesUnder(base string) []string {
	if _, err := os.Stat(filepath.Join(base, "cgroup.controllers")); err == nil {
		return []string{base}
	}
	entries, _ := filepath.Glob(filepath.Join(base, "*"))
	var dirs []string
	for _, e := range entries {
		if fi, err := os.Stat(e); err == nil && fi.IsDir() {
			dirs = append(dirs, e)
		}
	}
	return dirs
}

// RemovePodCgroup removes a pod's cgroup directories (its containers' went with them)
// from every hierarchy; runc leaves the parents it made. Missing ones are fine.
func RemovePodCgroup(root, uid string) error {
	var errs []error
	for _, mnt := range cgroupMounts() {
		for _, qosDir := range []string{"", "burstable", "besteffort"} {
			dir := filepath.Join(mnt, root, "kubepods", qosDir, "pod"+uid)
			if err := removeTree(dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// RemoveRoot removes the cgroup root from every hierarchy once no pod runs below it
// (minilab down, tests).
func RemoveRoot(root string) error {
	var errs []error
	for _, mnt := range cgroupMounts() {
		errs = append(errs, removeTree(filepath.Join(mnt, root)))
	}
	return errors.Join(errs...)
}

// removeTree rmdirs a cgroup and its children, deepest first (cgroup directories hold
// only control files, which rmdir takes with them).
func removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := rmdirCgroup(dir); err != nil {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	return nil
}

// rmdirCgroup removes an empty cgroup. One whose last task is still exiting is busy for a
// moment, so EBUSY is retried for about 2.5 s, doubling the wait, as libcontainer's
// RemovePath does.
func rmdirCgroup(dir string) error {
	delay := 10 * time.Millisecond
	for try := 1; ; try++ {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || try == 9 {
			return err
		}
		time.Sleep(delay)
		delay *= 2
	}
}

// ownOOMScoreAdj is the kubelet's score for itself: the OOM killer spares the node agent.
const ownOOMScoreAdj = -999

// ProtectSelf gives minilet the kubelet's own OOM score and reports the lowest score it
// may hand its containers: without CAP_SYS_RESOURCE (some sandboxed hosts) scores cannot
// go below 0, and asking runc for one would fail every container.
func ProtectSelf() (floor int, err error) {
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte(fmt.Sprint(ownOOMScoreAdj)), 0o644); err != nil {
		return 0, fmt.Errorf("lower minilet's own oom_score_adj to %d (CAP_SYS_RESOURCE missing?): %w", ownOOMScoreAdj, err)
	}
	return -1000, nil
}

// EnsureNodeCgroup makes ROOT/kubepods, the cgroup every pod is under, and sizes it to
// the node's allocatable resources as the kubelet does (enforce-node-allocatable=pods):
// its CPU weight is the allocatable CPU (without it all pods together would weigh as much
// as one busy host process) and its memory limit the allocatable memory, so pods
// together cannot eat what --system-reserved and --kube-reserved keep back.
func EnsureNodeCgroup(root string, cpuMillis, memoryBytes int64) error {
	shares := max(uint64(cpuMillis)*sharesPerCPU/1000, minShares)
	if unifiedCgroups() {
		dir := filepath.Join("/sys/fs/cgroup", root, "kubepods")
		if err := enableControllers(root); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return errors.Join(
			os.WriteFile(filepath.Join(dir, "cpu.weight"), []byte(fmt.Sprint(sharesToWeight(shares))), 0o644),
			os.WriteFile(filepath.Join(dir, "memory.max"), []byte(fmt.Sprint(memoryBytes)), 0o644))
	}
	for _, c := range []struct{ controller, file, value string }{
		{"cpu", "cpu.shares", fmt.Sprint(shares)},
		{"memory", "memory.limit_in_bytes", fmt.Sprint(memoryBytes)},
	} {
		dir := filepath.Join("/sys/fs/cgroup", c.controller, root, "kubepods")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.value), 0o644); err != nil {
			return fmt.Errorf("set %s of %s: %w", c.file, dir, err)
		}
	}
	return nil
}

// enableControllers turns the cpu controller on for the children of each cgroup from the
// unified root down to ROOT (cgroup v2 hands controllers down level by level).
func enableControllers(root string) error {
	dir := "/sys/fs/cgroup"
	for _, part := range filepath.SplitList(strings.ReplaceAll(strings.Trim(root, "/"), "/", string(filepath.ListSeparator))) {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu +memory +pids"), 0o644); err != nil {
			return fmt.Errorf("enable cgroup controllers in %s: %w", dir, err)
		}
		dir = filepath.Join(dir, part)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu +memory +pids"), 0o644)
}

// SetMemoryLimit caps the memory of cgroup dir (made where missing) at bytes: a lab node's
// whole cgroup (minilab up --node-memory), which its minilet then reports as capacity.
func SetMemoryLimit(dir string, bytes int64) error {
	if unifiedCgroups() {
		if err := enableControllers(filepath.Dir(dir)); err != nil {
			return err
		}
		d := filepath.Join("/sys/fs/cgroup", dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(d, "memory.max"), []byte(fmt.Sprint(bytes)), 0o644)
	}
	d := filepath.Join("/sys/fs/cgroup/memory", dir)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d, "memory.limit_in_bytes"), []byte(fmt.Sprint(bytes)), 0o644); err != nil {
		return fmt.Errorf("set memory.limit_in_bytes of %s: %w", d, err)
	}
	return nil
}

// MakeCgroup makes cgroup dir in every hierarchy but v1 cpuset (a new cpuset cgroup takes
// no process until its cpus and mems are written), so a process started before it is
// moved in (minilab's daemons) finds its cgroup there.
func MakeCgroup(dir string) error {
	var errs []error
	for _, d := range cgroupDirs(dir) {
		errs = append(errs, os.MkdirAll(d, 0o755))
	}
	return errors.Join(errs...)
}

// AddProcess moves process pid into cgroup dir (made where missing) in every hierarchy
// but v1 cpuset (minilab puts a lab node's daemons beside its pods, so the node's usage
// is its own).
func AddProcess(dir string, pid int) error {
	if err := MakeCgroup(dir); err != nil {
		return err
	}
	var errs []error
	for _, d := range cgroupDirs(dir) {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(fmt.Sprint(pid)), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("move process %d into cgroup %s: %w", pid, d, err))
		}
	}
	return errors.Join(errs...)
}

// cgroupDirs is where cgroup dir is in each hierarchy but v1 cpuset.
func cgroupDirs(dir string) []string {
	var dirs []string
	for _, mnt := range cgroupMounts() {
		if !strings.Contains(filepath.Base(mnt), "cpuset") {
			dirs = append(dirs, filepath.Join(mnt, dir))
		}
	}
	return dirs
}

// unifiedCgroups says whether the host runs cgroup v2 alone (containerd's check, done
// once), which decides the files a cgroup's values are in.
func unifiedCgroups() bool { return cgroups.Mode() == cgroups.Unified }
