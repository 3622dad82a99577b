package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/minik8s/minik8s/pkg/agent/nodestatus"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// runtimeTimeout bounds one question to the runtime, so a hung containerd
// shows up as NotReady instead of a stuck heartbeat.
const runtimeTimeout = 5 * time.Second

// newNodeStatus is the node's status manager, once Run has measured capacity and
// allocatable.
func (a *Agent) newNodeStatus() *nodestatus.Manager {
	node := nodestatus.Node{Name: a.cfg.NodeName, IP: a.cfg.NodeIP, PodCIDR: a.cfg.PodCIDR}
	if a.cfg.ServesNodeAPI() {
		node.APIPort = a.cfg.Port
	}
	return nodestatus.New(nodestatus.Config{Node: node, Client: a.client, Clock: a.clock, Log: a.log,
		Runtime: a.runtimeStatus, Images: a.listImages, Capacity: a.capacity, Allocatable: a.allocatable,
		Stats: a.stats, Pressure: a.pressure,
		Event: func(eventType, reason, message string) { a.nodeEvent(eventType, reason, "%s", message) }})
}

// runtimeStatus returns the runtime's version, or why the node cannot run pods: the runtime
// is down or not ready, or the pod network is not (no CNI installed yet).
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
	return version, a.sync.NetworkReady()
}

// listImages lists the runtime's images for the node's status.images.
func (a *Agent) listImages(ctx context.Context) ([]runtime.Image, error) {
	ctx, cancel := context.WithTimeout(ctx, runtimeTimeout)
	defer cancel()
	return a.rt.ListImages(ctx)
}
