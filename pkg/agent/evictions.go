package agent

import (
	"cmp"
	"context"
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
// through their workers and reclaiming disk through images' garbage collector.
func (a *Agent) newEvictionManager(images *imagegc.Collector) *eviction.Manager {
	return eviction.New(eviction.Config{
		Pressure: a.pressure, MaxPodGracePeriod: a.cfg.EvictionMaxPodGracePeriod,
		Stats: a.stats, MemoryCgroup: cmp.Or(a.cfg.NodeCgroup, "/"), Pods: a.activePods, Evict: a.evictPod,
		ReclaimDisk: func(ctx context.Context) (int64, error) { return images.GarbageCollect(ctx) },
		Recorder:    a.recorder, Clock: a.clock, Log: a.log.With("component", "eviction"),
	})
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
