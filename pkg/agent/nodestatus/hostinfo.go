package nodestatus

import (
	"bytes"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"

	cadvisorapi "github.com/google/cadvisor/lib/model"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minik8s/minik8s/internal/resourcename"
	"github.com/minik8s/minik8s/pkg/stats"
)

// KubeletVersion is what minilet reports as status.nodeInfo.kubeletVersion.
const KubeletVersion = "v1.32.0-minik8s"

// MaxPods is the kubelet's default --max-pods.
const MaxPods = 110

// HostCapacity measures what the host offers to pods from its machine info: its CPUs
// (cAdvisor's NumCores, as the kubelet's CapacityFromMachineInfo), its memory (or the
// node cgroup's limit where that is lower: a lab node's --node-memory), one
// hugepages-<size> per page size the kernel offers, the filesystem of rootDir and the
// kubelet's default pod count.
func HostCapacity(rootDir, nodeCgroup string) (corev1.ResourceList, error) {
	m, err := Machine()
	if err != nil {
		return nil, err
	}
	return capacityOf(m, rootDir, nodeCgroup)
}

// capacityOf is HostCapacity from given machine info.
func capacityOf(m *cadvisorapi.MachineInfo, rootDir, nodeCgroup string) (corev1.ResourceList, error) {
	mem := int64(m.MemoryCapacity)
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
		corev1.ResourceCPU:              *resource.NewQuantity(int64(m.NumCores), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(MaxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(fs.Blocks)*int64(fs.Bsize), resource.BinarySI),
	}
	for _, hp := range m.HugePages {
		size := int64(hp.PageSize) * 1024 // cAdvisor gives the page size in KiB
		name := corev1.ResourceName(corev1.ResourceHugePagesPrefix + resource.NewQuantity(size, resource.BinarySI).String())
		capacity[name] = *resource.NewQuantity(int64(hp.NumPages)*size, resource.BinarySI)
	}
	return capacity, nil
}

// HugePagesMemory is the memory the capacity's huge pages take, which the kubelet takes
// out of allocatable memory.
func HugePagesMemory(capacity corev1.ResourceList) corev1.ResourceList {
	var total int64
	for name, q := range capacity {
		if resourcename.IsHugePages(name) {
			total += q.Value()
		}
	}
	return corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(total, resource.BinarySI)}
}

// HostNodeInfo describes the host the way the kubelet does in status.nodeInfo, its
// identities from the machine info (left empty where it cannot be read: HostCapacity,
// read at start, has then already failed minilet's start with the reason).
func HostNodeInfo(runtimeVersion string) corev1.NodeSystemInfo {
	m, err := Machine()
	if err != nil {
		m = &cadvisorapi.MachineInfo{}
	}
	var uts unix.Utsname
	kernel := "unknown"
	if err := unix.Uname(&uts); err == nil {
		kernel = unix.ByteSliceToString(uts.Release[:])
	}
	return corev1.NodeSystemInfo{
		MachineID:               m.MachineID,
		SystemUUID:              m.SystemUUID,
		BootID:                  m.BootID,
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
