package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/agent/nodestatus"
)

func TestNodeRegistrationAndStatus(t *testing.T) {
	h := newHarness(t)
	a := h.agent
	capacity, err := nodestatus.HostCapacity(a.cfg.RootDir)
	if err != nil {
		t.Fatal(err)
	}
	a.capacity = capacity
	reserved, err := nodestatus.ParseReserved("system-reserved", map[string]string{"memory": "512Mi", "cpu": "100m"})
	if err != nil {
		t.Fatal(err)
	}
	a.allocatable = nodestatus.Allocatable(capacity, reserved)
	a.pauseImageReady.Store(true)
	if err := a.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.updateNodeStatus(h.ctx); err != nil {
		t.Fatal(err)
	}
	node, err := h.client.CoreV1().Nodes().Get(h.ctx, testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels[corev1.LabelHostname] != testNode || node.Labels[corev1.LabelOSStable] != "linux" || node.Labels[corev1.LabelArchStable] == "" {
		t.Errorf("labels %v", node.Labels)
	}
	if node.Spec.PodCIDR != "10.244.1.0/24" || len(node.Spec.PodCIDRs) != 1 {
		t.Errorf("podCIDR %q %v", node.Spec.PodCIDR, node.Spec.PodCIDRs)
	}
	if len(node.Status.Addresses) != 2 || node.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.200.0.11"}) {
		t.Errorf("addresses %v", node.Status.Addresses)
	}
	if node.Status.Capacity.Cpu().Value() < 1 || node.Status.Capacity.Memory().Value() < 1<<20 || node.Status.Allocatable.Pods().Value() != 110 {
		t.Errorf("capacity %v allocatable %v", node.Status.Capacity, node.Status.Allocatable)
	}
	wantMemory := capacity.Memory().Value() - 512<<20
	if got := node.Status.Allocatable.Memory().Value(); got != wantMemory || node.Status.Allocatable.Cpu().MilliValue() != capacity.Cpu().MilliValue()-100 {
		t.Errorf("allocatable %v with 512Mi and 100m reserved from capacity %v", node.Status.Allocatable, node.Status.Capacity)
	}
	info := node.Status.NodeInfo
	if info.ContainerRuntimeVersion != "containerd://1.6.20" || info.KubeletVersion != nodestatus.KubeletVersion || info.KernelVersion == "" || info.OSImage == "" {
		t.Errorf("nodeInfo %+v", info)
	}
	ready := nodeCondition(node, corev1.NodeReady)
	if ready.Status != corev1.ConditionTrue || ready.Reason != "KubeletReady" {
		t.Errorf("Ready %+v", ready)
	}
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		if nodeCondition(node, c).Status != corev1.ConditionFalse {
			t.Errorf("%s is not False", c)
		}
	}

	// containerd goes away: NotReady with the reason, a fresh heartbeat and a new transition time.
	h.clock.Step(10 * time.Second)
	h.rt.versionErr = errors.New("connection refused")
	if err := a.updateNodeStatus(h.ctx); err != nil {
		t.Fatal(err)
	}
	node, _ = h.client.CoreV1().Nodes().Get(h.ctx, testNode, metav1.GetOptions{})
	notReady := nodeCondition(node, corev1.NodeReady)
	if notReady.Status != corev1.ConditionFalse || notReady.Reason != "KubeletNotReady" || !strings.Contains(notReady.Message, "container runtime is down") {
		t.Errorf("Ready while containerd is down: %+v", notReady)
	}
	if !notReady.LastHeartbeatTime.After(ready.LastHeartbeatTime.Time) || !notReady.LastTransitionTime.After(ready.LastTransitionTime.Time) {
		t.Errorf("heartbeat %v / transition %v not moved from %v / %v", notReady.LastHeartbeatTime, notReady.LastTransitionTime, ready.LastHeartbeatTime, ready.LastTransitionTime)
	}
	if node.Status.NodeInfo.ContainerRuntimeVersion != "containerd://1.6.20" {
		t.Errorf("runtime version lost while containerd is down: %q", node.Status.NodeInfo.ContainerRuntimeVersion)
	}
	memory := nodeCondition(node, corev1.NodeMemoryPressure)
	h.clock.Step(10 * time.Second)
	h.rt.versionErr = nil
	if err := a.updateNodeStatus(h.ctx); err != nil {
		t.Fatal(err)
	}
	node, _ = h.client.CoreV1().Nodes().Get(h.ctx, testNode, metav1.GetOptions{})
	if nodeCondition(node, corev1.NodeReady).Status != corev1.ConditionTrue {
		t.Error("not Ready again after containerd came back")
	}
	if m := nodeCondition(node, corev1.NodeMemoryPressure); !m.LastTransitionTime.Equal(&memory.LastTransitionTime) || !m.LastHeartbeatTime.After(memory.LastHeartbeatTime.Time) {
		t.Errorf("MemoryPressure transition moved or heartbeat did not: %+v", m)
	}
}

func TestRegistrationKeepsExistingNodeAndRefusesOtherPodCIDR(t *testing.T) {
	h := newHarness(t)
	existing := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{"team": "a"}}}
	if _, err := h.client.CoreV1().Nodes().Create(h.ctx, existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.agent.ensureNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	node, _ := h.client.CoreV1().Nodes().Get(h.ctx, testNode, metav1.GetOptions{})
	if node.Labels["team"] != "a" || node.Labels[corev1.LabelHostname] != testNode || node.Spec.PodCIDR != "10.244.1.0/24" {
		t.Errorf("existing node not brought in line: labels %v podCIDR %q", node.Labels, node.Spec.PodCIDR)
	}

	h.agent.cfg.PodCIDR = "10.244.9.0/24"
	if err := h.agent.ensureNode(h.ctx); err == nil || !strings.Contains(err.Error(), "--pod-cidr") {
		t.Errorf("another podCIDR accepted: %v", err)
	}
}

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
	if calls := h.rt.takeCalls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "import localhost/minik8s/pause") {
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
