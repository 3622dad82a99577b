package nodestatus

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"github.com/minik8s/minik8s/pkg/stats"
)

// KubeletVersion is what minilet reports as status.nodeInfo.kubeletVersion.
const KubeletVersion = "v1.32.0-minik8s"

// maxPods is the kubelet's default --max-pods.
const maxPods = 110

// HostCapacity measures what the host offers to pods: its CPUs, its memory (or the node
// cgroup's limit where that is lower: a lab node's --node-memory), the filesystem of
// rootDir and the kubelet's default pod count.
func HostCapacity(rootDir, nodeCgroup string) (corev1.ResourceList, error) {
	mem, err := memTotal("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	if nodeCgroup != "" {
		limit, ok, err := stats.CgroupMemoryLimit(nodeCgroup)
		if err != nil {
			return nil, fmt.Errorf("memory limit of the node cgroup (--node-cgroup): %w", err)
		}
		if ok && int64(limit) < mem {
			mem = int64(limit)
		}
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(rootDir, &fs); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", rootDir, err)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(onlineCPUs("/sys/devices/system/cpu/online")), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(maxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(fs.Blocks)*int64(fs.Bsize), resource.BinarySI),
	}
	maps.Copy(capacity, hugePages("/sys/kernel/mm/hugepages"))
	return capacity, nil
}

// onlineCPUs counts the machine's online CPUs (a cpulist such as 0-3,6), as cAdvisor's
// machine info does, not the ones minilet's own affinity allows; runtime.NumCPU where
// the file cannot be read.
func onlineCPUs(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return goruntime.NumCPU()
	}
	set, err := cpuset.Parse(strings.TrimSpace(string(data)))
	if err != nil || set.Size() == 0 {
		return goruntime.NumCPU()
	}
	return set.Size()
}

// hugePages are the hugepages-<size> resources the kubelet reports, one per page size
// the kernel offers (dir/hugepages-2048kB/nr_hugepages pages of 2Mi), 0 where none is
// reserved.
func hugePages(dir string) corev1.ResourceList {
	out := corev1.ResourceList{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		kb, ok := strings.CutPrefix(e.Name(), "hugepages-")
		kb, ok2 := strings.CutSuffix(kb, "kB")
		size, err := strconv.ParseInt(kb, 10, 64)
		if !ok || !ok2 || err != nil {
			continue
		}
		pages, err := strconv.ParseInt(readTrimmed(filepath.Join(dir, e.Name(), "nr_hugepages")), 10, 64)
		if err != nil {
			continue
		}
		name := corev1.ResourceName(corev1.ResourceHugePagesPrefix + resource.NewQuantity(size*1024, resource.BinarySI).String())
		out[name] = *resource.NewQuantity(pages*size*1024, resource.BinarySI)
	}
	return out
}

// HugePagesMemory is the memory the capacity's huge pages take, which the kubelet takes
// out of allocatable memory.
func HugePagesMemory(capacity corev1.ResourceList) corev1.ResourceList {
	var total int64
	for name, q := range capacity {
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			total += q.Value()
		}
	}
	return corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(total, resource.BinarySI)}
}

// memTotal reads MemTotal (in bytes) from a meminfo file.
func memTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read memory size: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: bad MemTotal %q: %w", path, fields[1], err)
			}
			return kb * 1024, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return 0, fmt.Errorf("%s has no MemTotal line", path)
}

// HostNodeInfo describes the host the way the kubelet does in status.nodeInfo.
func HostNodeInfo(runtimeVersion string) corev1.NodeSystemInfo {
	var uts unix.Utsname
	kernel := "unknown"
	if err := unix.Uname(&uts); err == nil {
		kernel = unix.ByteSliceToString(uts.Release[:])
	}
	return corev1.NodeSystemInfo{
		MachineID:               readTrimmed("/etc/machine-id"),
		SystemUUID:              readTrimmed("/sys/class/dmi/id/product_uuid"),
		BootID:                  readTrimmed("/proc/sys/kernel/random/boot_id"),
		KernelVersion:           kernel,
		OSImage:                 osImage("/etc/os-release"),
		ContainerRuntimeVersion: "containerd://" + runtimeVersion,
		KubeletVersion:          KubeletVersion,
		OperatingSystem:         goruntime.GOOS,
		Architecture:            goruntime.GOARCH,
	}
}

// osImage is PRETTY_NAME of an os-release file, as the kubelet reports it.
func osImage(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	for line := range bytes.Lines(data) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(string(line)), "PRETTY_NAME="); ok {
			if unquoted, err := strconv.Unquote(v); err == nil {
				return unquoted
			}
			return strings.Trim(v, `'"`)
		}
	}
	return "unknown"
}

// readTrimmed returns a small identity file's content, or "" where the host has none.
func readTrimmed(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
