package agent

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// TestRunCallsReadyOnceRegistered checks Config.Ready (minilet's READY=1 to systemd) comes
// once, with the node already registered.
func TestRunCallsReadyOnceRegistered(t *testing.T) {
	h := newHarness(t)
	a := h.agent
	a.clock = clock.RealClock{}
	h.Runtime.Clock = a.clock
	ctx, cancel := context.WithCancel(h.ctx)
	registered := make(chan bool, 2)
	a.cfg.Ready = func() {
		_, err := h.Client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
		registered <- err == nil
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	select {
	case ok := <-registered:
		if !ok {
			t.Fatal("Ready was called before the node was registered")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Ready was not called within 30s")
	}
	select {
	case <-registered:
		t.Error("Ready was called twice")
	case <-time.After(time.Second):
	}
}
