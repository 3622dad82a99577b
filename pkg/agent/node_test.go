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
