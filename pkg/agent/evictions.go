package agent

import (
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

// newEvictionManager is the node's eviction manager on --eviction-hard, ending pods
// through their workers and reclaiming disk through images' garbage collector.
func (a *Agent) newEvictionManager(images *imagegc.Collector) *eviction.Manager {
	thresholds, _ := stats.ParseThresholds(a.cfg.EvictionHard) // checked by Validate
	return eviction.New(eviction.Config{
		Thresholds: thresholds, Stats: a.stats, Pods: a.activePods, Evict: a.evictPod,
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
