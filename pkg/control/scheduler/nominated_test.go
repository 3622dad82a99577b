package scheduler

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestNominatedPodsHoldTheirRoom(t *testing.T) {
	n := newNominator()
	high := schedtest.Pod("high", nil, 3000)
	high.Spec.Priority = ptr.To[int32](100)
	high.Status.NominatedNodeName = "n1"
	n.set(high)
	snap := schedtest.Snapshot([]*corev1.Node{schedtest.Node("n1", nil)})
	node := snap.Get("n1")

	low := schedtest.Pod("low", nil, 2000)
	got := withNominated(node, n.forPod(low))
	if got.Requested.MilliCPU != 3000 || node.Requested.MilliCPU != 0 {
		t.Fatalf("a lower-priority pod sees %dm requested (want the nominated 3000m), the snapshot %dm (want 0)", got.Requested.MilliCPU, node.Requested.MilliCPU)
	}
	higher := schedtest.Pod("higher", nil, 2000)
	higher.Spec.Priority = ptr.To[int32](1000)
	if withNominated(node, n.forPod(higher)) != node {
		t.Error("a higher-priority pod must not see lower nominated pods")
	}
	if withNominated(node, n.forPod(high)) != node {
		t.Error("the nominated pod must not count against itself")
	}
	bound := high.DeepCopy()
	bound.Spec.NodeName = "n1"
	n.set(bound)
	if n.forPod(low) != nil {
		t.Error("a bound pod is still nominated")
	}
}
