package podsync

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// stopReporting runs stop, the stop of a deleted pod's containers, writing the pod's status
// whenever a probe changes its readiness meanwhile, as the kubelet's status manager writes
// readiness while SyncTerminatingPod kills: a container whose readiness probe fails while
// it stops (in its preStop hook) turns not ready, and its endpoints stop serving.
func (s *Syncer) stopReporting(ctx context.Context, st *PodState, pod *corev1.Pod, stop func() error) error {
	changed := s.stopping.watch(pod.UID)
	defer s.stopping.unwatch(pod.UID)
	stopped, written := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(written)
		for {
			select {
			case <-stopped:
				return
			case <-changed:
				all, err := s.rt.ListContainers(ctx, string(pod.UID))
				if err == nil {
					err = s.writeStatus(ctx, st, pod, s.podStatus(st, pod, all, true))
				}
				if err != nil {
					s.log.Warn("writing the readiness of a stopping pod", "pod", PodKey(pod), "err", err)
				}
			}
		}
	}()
	err := stop()
	close(stopped)
	<-written // st is the caller's again
	return err
}

// stoppingPods tells the pods whose containers stop now (stopReporting) that a probe
// result of theirs changed.
type stoppingPods struct {
	mu    sync.Mutex
	byUID map[types.UID]chan struct{}
}

func (p *stoppingPods) watch(uid types.UID) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byUID == nil {
		p.byUID = map[types.UID]chan struct{}{}
	}
	ch := make(chan struct{}, 1)
	p.byUID[uid] = ch
	return ch
}

func (p *stoppingPods) unwatch(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byUID, uid)
}

// probeChanged is called by the prober when a result of the pod changes.
func (p *stoppingPods) probeChanged(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case p.byUID[uid] <- struct{}{}:
	default: // already told, or not stopping (a nil channel)
	}
}
