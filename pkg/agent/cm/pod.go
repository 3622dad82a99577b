package cm

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	if unifiedCgroups() {
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
	if unifiedCgroups() {
		return writeAll(filepath.Join("/sys/fs/cgroup", path), map[string]string{
			"cpu.max": fmt.Sprintf("max %d", cfsPeriod), "memory.max": "max",
		})
	}
	return errors.Join(
		writeAll(filepath.Join("/sys/fs/cgroup/cpu", path), map[string]string{"cpu.cfs_quota_us": "-1"}),
		writeAll(filepath.Join("/sys/fs/cgroup/memory", path), map[string]string{"memory.limit_in_bytes": "-1"}),
	)
}

// PodCgroupValues are the CPU request and limit and the memory limit a pod cgroup is set
// to, read back as the kubelet's CPURequestsFromConfig, CPULimitsFromConfig and
// MemoryLimitsFromConfig do; nil where the cgroup sets none.
type PodCgroupValues struct {
	CPURequest, CPULimit, MemoryLimit *resource.Quantity
}

// v1Unlimited: a cgroup v1 memory limit this high is the kernel's "no limit" (LONG_MAX
// rounded to pages), which cgroup v2 spells "max".
const v1Unlimited = int64(1) << 62

// ReadPodCgroup reads the values of pod's cgroup.
func ReadPodCgroup(root string, pod *corev1.Pod) (PodCgroupValues, error) {
	path := PodCgroup(root, pod)
	var shares uint64
	var quota, memory int64
	if unifiedCgroups() {
		dir := filepath.Join("/sys/fs/cgroup", path)
		weight, err := readInt(dir, "cpu.weight")
		if err != nil {
			return PodCgroupValues{}, err
		}
		shares = 2 + uint64(weight-1)*262142/9999 // the inverse of sharesToWeight
		cpuMax, err := readFields(dir, "cpu.max")
		if err != nil {
			return PodCgroupValues{}, err
		}
		quota, _ = strconv.ParseInt(cpuMax[0], 10, 64) // "max": none
		if memory, err = readInt(dir, "memory.max"); err != nil && !errors.Is(err, strconv.ErrSyntax) {
			return PodCgroupValues{}, err
		}
	} else {
		s, err := readInt(filepath.Join("/sys/fs/cgroup/cpu", path), "cpu.shares")
		if err != nil {
			return PodCgroupValues{}, err
		}
		shares = uint64(s)
		if quota, err = readInt(filepath.Join("/sys/fs/cgroup/cpu", path), "cpu.cfs_quota_us"); err != nil {
			return PodCgroupValues{}, err
		}
		if memory, err = readInt(filepath.Join("/sys/fs/cgroup/memory", path), "memory.limit_in_bytes"); err != nil {
			return PodCgroupValues{}, err
		}
	}
	var v PodCgroupValues
	if shares >= minShares {
		v.CPURequest = resource.NewMilliQuantity(int64(math.Ceil(float64(shares*1000)/sharesPerCPU)), resource.DecimalSI)
	}
	if m := quota * 1000 / cfsPeriod; m > 0 {
		v.CPULimit = resource.NewMilliQuantity(m, resource.DecimalSI)
	}
	if memory > 0 && memory < v1Unlimited {
		v.MemoryLimit = resource.NewQuantity(memory, resource.BinarySI)
	}
	return v, nil
}

func readFields(dir, name string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("read %s of cgroup %s: %w", name, dir, err)
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return nil, fmt.Errorf("read %s of cgroup %s: empty", name, dir)
	}
	return fields, nil
}

// readInt reads a cgroup file holding one integer (an error wrapping strconv.ErrSyntax
// when it holds "max").
func readInt(dir, name string) (int64, error) {
	fields, err := readFields(dir, name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(fields[0], 10, 64)
}

// PodMemoryUsage is the memory pod's cgroup is charged for.
func PodMemoryUsage(root string, pod *corev1.Pod) (int64, error) {
	path := PodCgroup(root, pod)
	if unifiedCgroups() {
		return readInt(filepath.Join("/sys/fs/cgroup", path), "memory.current")
	}
	return readInt(filepath.Join("/sys/fs/cgroup/memory", path), "memory.usage_in_bytes")
}
