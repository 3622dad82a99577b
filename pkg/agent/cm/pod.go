package cm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/minik8s/minik8s/pkg/qos"
)

// PodLimits are a pod cgroup's settings, the kubelet's ResourceConfigForPod: CPU shares
// from the pod's requests (init containers counted as the scheduler counts them), and a
// CPU quota and memory limit only when every container declares that limit — one
// container without a limit leaves the pod unbounded in that resource.
type PodLimits struct {
	CPUShares   uint64
	CPUQuota    int64 // microseconds per cfsPeriod; 0: none
	MemoryLimit int64 // bytes; 0: none
	PidsLimit   int64 // 0: none
}

// PodResources computes a pod's PodLimits; pidsLimit is --pod-max-pids (<= 0: none).
func PodResources(pod *corev1.Pod, pidsLimit int64) PodLimits {
	l := PodLimits{CPUShares: minShares, PidsLimit: max(pidsLimit, 0)}
	if qos.Class(pod) == corev1.PodQOSBestEffort {
		return l
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	if m := requests.Cpu().MilliValue(); m > 0 {
		l.CPUShares = max(uint64(m)*sharesPerCPU/1000, minShares)
	}
	cpuDeclared, memoryDeclared := true, true
	for _, c := range pod.Spec.Containers {
		cpuDeclared = cpuDeclared && !c.Resources.Limits.Cpu().IsZero()
		memoryDeclared = memoryDeclared && !c.Resources.Limits.Memory().IsZero()
	}
	// Pod-level limits bound the pod whatever its containers declare, as the kubelet's
	// ResourceConfigForPod (PodLevelResources, on by default).
	if r := pod.Spec.Resources; r != nil {
		cpuDeclared = cpuDeclared || !r.Limits.Cpu().IsZero()
		memoryDeclared = memoryDeclared || !r.Limits.Memory().IsZero()
	}
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	if m := limits.Cpu().MilliValue(); cpuDeclared && m > 0 {
		l.CPUQuota = max(m*cfsPeriod/1000, minQuota)
	}
	if b := limits.Memory().Value(); memoryDeclared && b > 0 {
		l.MemoryLimit = b
	}
	return l
}

// EnsurePodCgroup makes the pod's cgroup, with its limits, before its containers start
// below it (runc would make it without any).
func EnsurePodCgroup(root string, pod *corev1.Pod, pidsLimit int64) error {
	path, l := PodCgroup(root, pod), PodResources(pod, pidsLimit)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		if err := enableControllers(path); err != nil {
			return err
		}
		dir := filepath.Join("/sys/fs/cgroup", path)
		cpuMax := "max"
		if l.CPUQuota > 0 {
			cpuMax = fmt.Sprint(l.CPUQuota)
		}
		return writeAll(dir, map[string]string{
			"cpu.weight": fmt.Sprint(sharesToWeight(l.CPUShares)),
			"cpu.max":    fmt.Sprintf("%s %d", cpuMax, cfsPeriod),
			"memory.max": limitOrMax(l.MemoryLimit),
			"pids.max":   limitOrMax(l.PidsLimit),
		})
	}
	quota := int64(-1)
	if l.CPUQuota > 0 {
		quota = l.CPUQuota
	}
	memory := int64(-1)
	if l.MemoryLimit > 0 {
		memory = l.MemoryLimit
	}
	return errors.Join(
		writeAll(filepath.Join("/sys/fs/cgroup/cpu", path), map[string]string{
			"cpu.shares": fmt.Sprint(l.CPUShares), "cpu.cfs_period_us": fmt.Sprint(cfsPeriod), "cpu.cfs_quota_us": fmt.Sprint(quota),
		}),
		writeAll(filepath.Join("/sys/fs/cgroup/memory", path), map[string]string{"memory.limit_in_bytes": fmt.Sprint(memory)}),
		writeAll(filepath.Join("/sys/fs/cgroup/pids", path), map[string]string{"pids.max": limitOrMax(l.PidsLimit)}),
	)
}

// writeAll makes the cgroup dir and writes its files (in a fixed order: the quota's
// period before the quota).
func writeAll(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make cgroup %s: %w", dir, err)
	}
	for _, name := range []string{"cpu.shares", "cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.weight", "cpu.max", "memory.limit_in_bytes", "memory.max", "pids.max"} {
		value, ok := files[name]
		if !ok {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0o644); err != nil {
			return fmt.Errorf("set %s of cgroup %s: %w", name, dir, err)
		}
	}
	return nil
}

func limitOrMax(v int64) string {
	if v <= 0 {
		return "max"
	}
	return fmt.Sprint(v)
}

// sharesToWeight is the kernel's and runc's cgroup v1 shares to v2 weight conversion.
func sharesToWeight(shares uint64) uint64 {
	return 1 + ((shares-2)*9999)/262142
}

// OpenPodCgroup lifts the pod cgroup's CPU quota and memory limit before its containers
// are resized: on cgroup v1 the kernel refuses a container a quota above its pod's.
// EnsurePodCgroup sets the pod's own limits again after.
func OpenPodCgroup(root string, pod *corev1.Pod) error {
	path := PodCgroup(root, pod)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return writeAll(filepath.Join("/sys/fs/cgroup", path), map[string]string{
			"cpu.max": fmt.Sprintf("max %d", cfsPeriod), "memory.max": "max",
		})
	}
	return errors.Join(
		writeAll(filepath.Join("/sys/fs/cgroup/cpu", path), map[string]string{"cpu.cfs_quota_us": "-1"}),
		writeAll(filepath.Join("/sys/fs/cgroup/memory", path), map[string]string{"memory.limit_in_bytes": "-1"}),
	)
}
