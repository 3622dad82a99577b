package nodestatus

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	cadvisorapi "github.com/google/cadvisor/lib/model"
	"k8s.io/utils/cpuset"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/stats"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestOSImage(t *testing.T) {
	dir := t.TempDir()
	osRelease := dir + "/os-release"
	writeFile(t, osRelease, "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")
	if got := osImage(osRelease); got != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("osImage = %q", got)
	}
}

func TestReservedResources(t *testing.T) {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("110")}
	system, err := ParseReserved("system-reserved", map[string]string{"cpu": "500m", "memory": "256Mi"})
	if err != nil {
		t.Fatal(err)
	}
	kube, err := ParseReserved("kube-reserved", map[string]string{"memory": "1Gi"})
	if err != nil {
		t.Fatal(err)
	}
	got := Allocatable(capacity, system, kube)
	if got.Cpu().MilliValue() != 1500 || got.Memory().Value() != 0 || got.Pods().Value() != 110 {
		t.Errorf("allocatable %v, want cpu 1500m, memory 0 (never negative), pods 110", got)
	}
	for _, bad := range []map[string]string{{"gpu": "1"}, {"memory": "lots"}, {"cpu": "-1"}} {
		if _, err := ParseReserved("kube-reserved", bad); err == nil || !strings.Contains(err.Error(), "--kube-reserved") {
			t.Errorf("ParseReserved(%v) = %v, want an error naming the flag", bad, err)
		}
	}
}

// As the kubelet's hardEvictionReservation: the hard memory.available and nodefs.available
// thresholds (a quantity, or a share of capacity) are held back from allocatable memory and
// ephemeral storage; soft thresholds and the other signals are not.
func TestHardEvictionThresholdsAreReserved(t *testing.T) {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"), corev1.ResourcePods: resource.MustParse("110")}
	hard, err := stats.ParseThresholdConfig(stats.EvictionFlags{Hard: "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,pid.available<100",
		Soft: "memory.available<300Mi", SoftGracePeriod: "memory.available=1m"})
	if err != nil {
		t.Fatal(err)
	}
	reserved := EvictionReserved(capacity, hard)
	if want := resource.MustParse("100Mi"); !reserved.Memory().Equal(want) {
		t.Errorf("memory reserved for eviction = %v, want %v (the hard threshold, not the soft one)", reserved.Memory(), &want)
	}
	if got, want := reserved.StorageEphemeral().Value(), int64(10<<30); got != want {
		t.Errorf("ephemeral-storage reserved for eviction = %d, want %d (10%% of capacity)", got, want)
	}
	if len(reserved) != 2 {
		t.Errorf("reserved %v, want memory and ephemeral-storage only", reserved)
	}
	got := Allocatable(capacity, reserved)
	if got.Memory().Value() != 924<<20 || got.StorageEphemeral().Value() != 90<<30 || got.Cpu().MilliValue() != 2000 {
		t.Errorf("allocatable %v, want memory 924Mi, ephemeral-storage 90Gi, cpu 2", got)
	}
	if none := EvictionReserved(capacity, nil); len(none) != 0 {
		t.Errorf("reserved without thresholds = %v, want nothing", none)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A node in a cgroup with a memory limit (minilab up --node-memory) offers that much, not
// the machine's memory.
func TestCapacityFollowsTheNodeCgroupLimit(t *testing.T) {
	testenv.RequireRoot(t, "makes a cgroup with a memory limit")
	cgroup := fmt.Sprintf("/minik8s-capacity-%d", os.Getpid())
	if err := cm.SetMemoryLimit(cgroup, 256<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cm.RemoveRoot(cgroup); err != nil {
			t.Error(err)
		}
	})
	capacity, err := HostCapacity(t.TempDir(), cgroup)
	if err != nil {
		t.Fatal(err)
	}
	if got := capacity.Memory().Value(); got != 256<<20 {
		t.Errorf("memory capacity %d in a cgroup limited to 256Mi", got)
	}
	machine, err := HostCapacity(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if machine.Memory().Value() <= 256<<20 {
		t.Errorf("the machine's memory %v", machine.Memory())
	}
}

// cAdvisor's machine info on this host: its CPUs are the online ones, its memory is
// MemTotal, its identities are the host's; and the node's capacity and nodeInfo carry them.
func TestMachineInfoOfThisHost(t *testing.T) {
	m, err := Machine()
	if err != nil {
		t.Fatal(err)
	}
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := cpuset.Parse(strings.TrimSpace(string(online)))
	if err != nil {
		t.Fatal(err)
	}
	if m.NumCores != cpus.Size() {
		t.Errorf("NumCores %d, online CPUs %s", m.NumCores, online)
	}
	var meminfo syscall.Sysinfo_t
	if err := syscall.Sysinfo(&meminfo); err != nil {
		t.Fatal(err)
	}
	if total := meminfo.Totalram * uint64(meminfo.Unit); m.MemoryCapacity != total {
		t.Errorf("MemoryCapacity %d, the kernel's total RAM %d", m.MemoryCapacity, total)
	}
	bootID, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	info := HostNodeInfo("2.0")
	if info.BootID == "" || info.BootID != strings.TrimSpace(string(bootID)) || info.BootID != m.BootID {
		t.Errorf("nodeInfo bootID %q, machine info %q, the kernel's %q", info.BootID, m.BootID, bootID)
	}
	capacity, err := HostCapacity(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if capacity.Cpu().Value() != int64(m.NumCores) || capacity.Memory().Value() != int64(m.MemoryCapacity) {
		t.Errorf("capacity %v from machine info with %d cores and %d bytes", capacity, m.NumCores, m.MemoryCapacity)
	}
}

// The kubelet's capacity from machine info: cpu is NumCores, one hugepages-<size> per
// page size (cAdvisor gives sizes in KiB), and huge pages come out of allocatable memory.
func TestCapacityFromMachineInfo(t *testing.T) {
	m := &cadvisorapi.MachineInfo{NumCores: 7, MemoryCapacity: 1 << 30,
		HugePages: []cadvisorapi.HugePagesInfo{{PageSize: 2048, NumPages: 16}, {PageSize: 1048576, NumPages: 0}}}
	capacity, err := capacityOf(m, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	two, gig := capacity["hugepages-2Mi"], capacity["hugepages-1Gi"]
	if capacity.Cpu().Value() != 7 || two.Value() != 32<<20 || gig.Value() != 0 || len(capacity) != 6 {
		t.Errorf("capacity %v, want cpu 7, hugepages-2Mi 32Mi and hugepages-1Gi 0", capacity)
	}
	if got := Allocatable(capacity, HugePagesMemory(capacity)); got.Memory().Value() != 1<<30-32<<20 {
		t.Errorf("allocatable memory %v with 32Mi of huge pages in 1Gi", got.Memory())
	}
}
