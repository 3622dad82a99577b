package agent

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minik8s/minik8s/pkg/stats"
)

type fixedStats struct{ snap *stats.Snapshot }

func (f *fixedStats) Latest() *stats.Snapshot { return f.snap }

func memorySample(available, workingSet uint64) *stats.Snapshot {
	return &stats.Snapshot{Summary: statsapi.Summary{Node: statsapi.NodeStats{
		Memory: &statsapi.MemoryStats{AvailableBytes: &available, WorkingSetBytes: &workingSet}}}}
}

// The node's MemoryPressure follows the usage samples against --eviction-hard, with the
// kubelet's reasons, and stays for the transition period after the pressure ends.
func TestPressureConditions(t *testing.T) {
	h := newHarness(t)
	a := h.agent
	thresholds, err := stats.ParseThresholds("memory.available<1Gi")
	if err != nil {
		t.Fatal(err)
	}
	a.pressure = stats.NewPressure(thresholds, 5*time.Minute)
	sample := &fixedStats{snap: memorySample(512<<20, 7<<30)}
	a.stats = sample
	a.pauseImageReady.Store(true)
	if err := a.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	conditions := func() (mem, disk corev1.NodeCondition) {
		t.Helper()
		if err := a.updateNodeStatus(h.ctx); err != nil {
			t.Fatal(err)
		}
		node, err := h.client.CoreV1().Nodes().Get(h.ctx, testNode, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return nodeCondition(node, corev1.NodeMemoryPressure), nodeCondition(node, corev1.NodeDiskPressure)
	}
	mem, disk := conditions()
	if mem.Status != corev1.ConditionTrue || mem.Reason != "KubeletHasInsufficientMemory" ||
		!strings.HasPrefix(mem.Message, "kubelet has insufficient memory available (memory.available: 536870912 available < 1073741824)") {
		t.Errorf("with 512Mi available: %+v", mem)
	}
	if disk.Status != corev1.ConditionFalse || disk.Reason != "KubeletHasNoDiskPressure" {
		t.Errorf("disk pressure without disk figures: %+v", disk)
	}
	sample.snap = memorySample(6<<30, 2<<30)
	h.clock.Step(time.Minute)
	if mem, _ := conditions(); mem.Status != corev1.ConditionTrue {
		t.Errorf("memory pressure gone within the transition period: %+v", mem)
	}
	h.clock.Step(5 * time.Minute)
	if mem, _ := conditions(); mem.Status != corev1.ConditionFalse || mem.Reason != "KubeletHasSufficientMemory" {
		t.Errorf("memory pressure after the transition period: %+v", mem)
	}
}
