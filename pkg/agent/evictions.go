package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/agent/eviction"
	"github.com/minik8s/minik8s/pkg/agent/imagegc"
	"github.com/minik8s/minik8s/pkg/agent/podsync"
	"github.com/minik8s/minik8s/pkg/stats"
)

// podCleanupTimeout is how long an eviction waits for the pod's containers to stop, as
// the kubelet's eviction manager waits for the pod's cleanup.
const podCleanupTimeout = 30 * time.Second

// newPressure holds the node's samples against its eviction thresholds, for the pressure
// conditions, the eviction manager and admission alike.
func (a *Agent) newPressure() *stats.Pressure {
	thresholds, _ := stats.ParseThresholdConfig(a.cfg.Eviction) // checked by Validate
	period := a.cfg.EvictionPressureTransitionPeriod
	if period <= 0 {
		period = stats.DefaultPressureTransitionPeriod
	}
	return stats.NewPressure(thresholds, period)
}

// newEvictionManager is the node's eviction manager on its thresholds, ending pods
// through their workers and reclaiming disk from finished pods and unused images.
func (a *Agent) newEvictionManager(images *imagegc.Collector) *eviction.Manager {
	return eviction.New(eviction.Config{
		Pressure: a.pressure, MaxPodGracePeriod: a.cfg.EvictionMaxPodGracePeriod,
		Stats: a.stats, MemoryCgroup: cmp.Or(a.cfg.NodeCgroup, "/"), Pods: a.activePods, Evict: a.evictPod,
		ReclaimDisk: func(ctx context.Context) error { return a.reclaimDisk(ctx, images) },
		Recorder:    a.recorder, Clock: a.clock, Log: a.log.With("component", "eviction"),
	})
}

// reclaimDisk frees disk without ending a pod, as the kubelet's node-level reclaim for a
// disk signal: the exited containers of finished pods first (DeleteAllUnusedContainers:
// their writable layers and logs; their status stays as written), then every image no
// container uses any more (DeleteUnusedImages).
func (a *Agent) reclaimDisk(ctx context.Context, images *imagegc.Collector) error {
	var errs []error
	removed := 0
	for _, pod := range a.nodePods() {
		if pod.DeletionTimestamp != nil || !podsync.IsTerminal(pod.Status.Phase) {
			continue // a deleted pod's containers go with it
		}
		n, err := a.sync.RemoveExitedContainers(ctx, pod)
		removed += n
		errs = append(errs, err)
	}
	if removed > 0 {
		a.log.Info("removed the exited containers of finished pods to free disk space", "containers", removed)
	}
	_, err := images.DeleteUnused(ctx)
	return errors.Join(append(errs, err)...)
}

// activePods are the node's pods that may still run: not finished, not being deleted.
func (a *Agent) activePods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range a.nodePods() {
		if pod.DeletionTimestamp == nil && !podsync.IsTerminal(pod.Status.Phase) {
			out = append(out, pod)
		}
	}
	return out
}

// evictPod has the pod's worker end it as e says, and waits until its containers have
// stopped and its status is written.
func (a *Agent) evictPod(ctx context.Context, pod *corev1.Pod, e podsync.Ending) error {
	done := a.sync.End(pod.UID, e)
	a.workers.Wake(pod.UID)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-a.clock.After(podCleanupTimeout):
		return fmt.Errorf("pod %s/%s did not stop within %s", pod.Namespace, pod.Name, podCleanupTimeout)
	}
}
