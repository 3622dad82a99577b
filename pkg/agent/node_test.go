package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestNodeNotReadyUntilPauseImageImported(t *testing.T) {
	h := newHarness(t)
	if _, err := h.agent.runtimeStatus(h.ctx); err == nil || !strings.Contains(err.Error(), "pause image") {
		t.Errorf("runtime status before the pause image: %v", err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second) // it retries until imported
	defer cancel()
	if err := h.agent.ensurePauseImage(ctx); err != nil || ctx.Err() != nil {
		t.Fatal(err)
	}
	if _, err := h.agent.runtimeStatus(h.ctx); err != nil {
		t.Errorf("runtime status after the pause image: %v", err)
	}
	if calls := h.Runtime.TakeCalls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "import localhost/minik8s/pause") {
		t.Errorf("runtime calls %q", calls)
	}
}

func nodeCondition(node *corev1.Node, typ corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return corev1.NodeCondition{}
}

// The Node's allocatable holds back the hard memory.available and nodefs.available
// thresholds (the kubelet's default --eviction-hard: 100Mi and 10%), while the pods' cgroup
// is sized without them, as the kubelet's GetNodeAllocatableAbsolute.
func TestAllocatableLessHardEvictionThresholds(t *testing.T) {
	h := newHarness(t)
	capacity, allocatable, cgroup := h.agent.capacity, h.agent.allocatable, h.agent.podsCgroup
	if got, want := capacity.Memory().Value()-allocatable.Memory().Value(), int64(100<<20); got != want {
		t.Errorf("capacity - allocatable memory = %d, want %d (memory.available<100Mi)", got, want)
	}
	if got, want := capacity.StorageEphemeral().Value()-allocatable.StorageEphemeral().Value(), capacity.StorageEphemeral().Value()/10; got < want-1 || got > want+1 {
		t.Errorf("capacity - allocatable ephemeral-storage = %d, want %d (nodefs.available<10%%)", got, want)
	}
	if !cgroup.Memory().Equal(*capacity.Memory()) || !cgroup.Cpu().Equal(*allocatable.Cpu()) {
		t.Errorf("pods' cgroup memory %v cpu %v, want the capacity's memory %v (nothing reserved here) and cpu %v", cgroup.Memory(), cgroup.Cpu(), capacity.Memory(), allocatable.Cpu())
	}
}
