package nodestatus

import (
	"fmt"
	"maps"
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

// The machine's CPUs and huge pages, as cAdvisor's machine info gives them to the kubelet.
func TestOnlineCPUsAndHugePages(t *testing.T) {
	dir := t.TempDir()
	online := dir + "/online"
	for list, want := range map[string]int{"0-3,6,8-9\n": 7, "0\n": 1} {
		writeFile(t, online, list)
		if got := onlineCPUs(online); got != want {
			t.Errorf("onlineCPUs(%q) = %d, want %d", list, got, want)
		}
	}
	if got := onlineCPUs(dir + "/none"); got < 1 {
		t.Errorf("onlineCPUs without the file = %d", got)
	}
	for _, d := range []string{"hugepages-2048kB", "hugepages-1048576kB"} {
		if err := os.MkdirAll(dir+"/hp/"+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, dir+"/hp/hugepages-2048kB/nr_hugepages", "16\n")
	writeFile(t, dir+"/hp/hugepages-1048576kB/nr_hugepages", "0\n")
	pages := hugePages(dir + "/hp")
	two, gig := pages["hugepages-2Mi"], pages["hugepages-1Gi"]
	if len(pages) != 2 || two.Value() != 32<<20 || gig.Value() != 0 {
		t.Errorf("hugePages = %v, want hugepages-2Mi 32Mi and hugepages-1Gi 0", pages)
	}
	capacity := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	maps.Copy(capacity, pages)
	if got := Allocatable(capacity, HugePagesMemory(capacity)); got.Memory().Value() != 1<<30-32<<20 {
		t.Errorf("allocatable memory %v with 32Mi of huge pages in 1Gi", got.Memory())
	}
}
