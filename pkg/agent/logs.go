package agent

import (
	"fmt"
	"os"
	"sync/atomic"

	"github.com/minik8s/minik8s/pkg/agent/nodeapi"
	corev1 "k8s.io/api/core/v1"
)

// ContainerLog finds a container's log for the node API: the current instance's file, or
// the previous one's after a restart, as `kubectl logs [--previous]` asks.
func (a *Agent) ContainerLog(namespace, podName, container string, previous bool) (string, func() bool, error) {
	lister := a.podLister
	if lister == nil {
		return "", nil, fmt.Errorf("pod %s/%s: minilet is starting, its pods are not known yet: %w", namespace, podName, nodeapi.ErrNotFound)
	}
	pod, err := lister.Pods(namespace).Get(podName)
	if err != nil {
		return "", nil, fmt.Errorf("pod %s/%s is not on node %s: %w", namespace, podName, a.cfg.NodeName, nodeapi.ErrNotFound)
	}
	var status *corev1.ContainerStatus
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == container {
			status = &pod.Status.ContainerStatuses[i]
		}
	}
	if status == nil {
		return "", nil, fmt.Errorf("container %q in pod %q: %w", container, podName, nodeapi.ErrNotFound)
	}
	count := status.RestartCount
	if previous {
		if status.LastTerminationState.Terminated == nil || count == 0 {
			return "", nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, podName)
		}
		count--
	}
	path := a.containerLogPath(pod, container, count)
	if _, err := os.Stat(path); err != nil {
		return "", nil, fmt.Errorf("container %q in pod %q has no log yet: %w", container, podName, nodeapi.ErrNotFound)
	}
	// The instance runs while the pod is on this node with the same restart count and a
	// running state; the informer tells, as the status minilet writes comes back.
	var stopped atomic.Bool
	running := func() bool {
		if previous || stopped.Load() {
			return false
		}
		cur, err := lister.Pods(namespace).Get(podName)
		if err != nil || cur.UID != pod.UID || cur.DeletionTimestamp != nil {
			stopped.Store(true)
			return false
		}
		for _, cs := range cur.Status.ContainerStatuses {
			if cs.Name == container {
				if cs.RestartCount != count || cs.State.Running == nil {
					stopped.Store(true)
				}
			}
		}
		return !stopped.Load()
	}
	return path, running, nil
}
