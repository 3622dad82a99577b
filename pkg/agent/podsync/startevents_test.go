package podsync

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
)

// TestContainerStartEvents: a started container has the v1.36 kubelet's Normal events
// "Created" "Container created" and "Started" "Container started" (startContainer in
// pkg/kubelet/kuberuntime/kuberuntime_container.go), without the container's name, which
// the event's fieldPath carries.
func TestContainerStartEvents(t *testing.T) {
	h := newHarness(t)
	h.TakeEvents()
	h.start(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	ev := h.TakeEvents()
	for _, want := range []string{"Normal Created Container created", "Normal Started Container started"} {
		if !slices.Contains(ev, want) {
			t.Errorf("events %q, want %q", ev, want)
		}
	}
}
