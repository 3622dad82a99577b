package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/minik8s/minik8s/pkg/agent/nodestatus"
)

// nodeStatusPeriod is how often the kubelet posts node status (--node-status-update-frequency).
const nodeStatusPeriod = 10 * time.Second

// runtimeTimeout bounds one question to the runtime, so a hung containerd
// shows up as NotReady instead of a stuck heartbeat.
const runtimeTimeout = 5 * time.Second

// updateNodeStatus posts the node's addresses, capacity, nodeInfo and
// conditions with a fresh heartbeat. A node deleted behind our back is
// registered again.
func (a *Agent) updateNodeStatus(ctx context.Context) error {
	runtimeVersion, runtimeErr := a.runtimeStatus(ctx)
	nodes := a.client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			a.log.Warn("node object is gone, registering again", "node", a.cfg.NodeName)
			if err := a.ensureNode(ctx); err != nil {
				return fmt.Errorf("register node %s again: %w", a.cfg.NodeName, err)
			}
			node, err = nodes.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
		}
		if err != nil {
			return fmt.Errorf("get node %s: %w", a.cfg.NodeName, err)
		}
		a.setNodeStatus(&node.Status, runtimeVersion, runtimeErr)
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// runtimeStatus returns the runtime's version, or why the node cannot run pods.
func (a *Agent) runtimeStatus(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, runtimeTimeout)
	defer cancel()
	version, err := a.rt.Version(ctx)
	if err != nil {
		return "", fmt.Errorf("container runtime is down: %w", err)
	}
	if !a.pauseImageReady.Load() {
		return version, errors.New("container runtime is not ready: pause image is not imported yet")
	}
	return version, nil
}

func (a *Agent) setNodeStatus(status *corev1.NodeStatus, runtimeVersion string, runtimeErr error) {
	now := metav1.NewTime(a.clock.Now()).Rfc3339Copy()
	status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: a.cfg.NodeIP},
		{Type: corev1.NodeHostName, Address: a.cfg.NodeName},
	}
	if a.cfg.ServesNodeAPI() { // where miniapi finds the node API
		status.DaemonEndpoints.KubeletEndpoint.Port = int32(a.cfg.Port)
	}
	status.Capacity = a.capacity
	status.Allocatable = a.allocatable
	info := nodestatus.HostNodeInfo(runtimeVersion)
	if runtimeVersion == "" { // keep the last known version while the runtime is down
		info.ContainerRuntimeVersion = status.NodeInfo.ContainerRuntimeVersion
	}
	status.NodeInfo = info
	a.setPressureConditions(status, now)
	if runtimeErr != nil {
		setNodeCondition(status, now, corev1.NodeReady, corev1.ConditionFalse, "KubeletNotReady", runtimeErr.Error())
	} else {
		setNodeCondition(status, now, corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status")
	}
}

// setNodeCondition refreshes a condition's heartbeat; its transition time
// moves only when its status changes.
func setNodeCondition(status *corev1.NodeStatus, now metav1.Time, typ corev1.NodeConditionType, value corev1.ConditionStatus, reason, message string) {
	cond := corev1.NodeCondition{Type: typ, Status: value, Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: now}
	for i, old := range status.Conditions {
		if old.Type != typ {
			continue
		}
		if old.Status == value {
			cond.LastTransitionTime = old.LastTransitionTime
		}
		status.Conditions[i] = cond
		return
	}
	status.Conditions = append(status.Conditions, cond)
}

// runNodeStatus posts node status every nodeStatusPeriod until ctx ends.
func (a *Agent) runNodeStatus(ctx context.Context) {
	tick := time.NewTicker(nodeStatusPeriod)
	defer tick.Stop()
	for {
		if err := a.updateNodeStatus(ctx); err != nil && ctx.Err() == nil {
			a.log.Error("update node status", "node", a.cfg.NodeName, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
