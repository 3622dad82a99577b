package nodestatus

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/agent/cm"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestMemTotalAndOSImage(t *testing.T) {
	dir := t.TempDir()
	meminfo := dir + "/meminfo"
	writeFile(t, meminfo, "MemFree:  10 kB\nMemTotal:       2048 kB\n")
	if got, err := memTotal(meminfo); err != nil || got != 2048*1024 {
		t.Errorf("memTotal = %d, %v", got, err)
	}
	writeFile(t, meminfo, "MemFree: 1 kB\n")
	if _, err := memTotal(meminfo); err == nil {
		t.Error("meminfo without MemTotal accepted")
	}
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
