// Package pleg notices container changes (an exit, a container gone) by listing the
// runtime every period and waking the workers of the pods whose containers changed, as
// the kubelet's generic PLEG (pod lifecycle event generator). It also counts the pods
// running.
package pleg

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// Config is what the relister lists and whom it tells.
type Config struct {
	// Runtime lists the containers of every pod.
	Runtime interface {
		ListContainers(ctx context.Context, podUID string) ([]runtime.Container, error)
	}
	Wake    func(uid types.UID)       // the pod's worker syncs it now
	Running interface{ Set(float64) } // the running-pods gauge
	Period  time.Duration             // how fast a change is noticed
	Log     *slog.Logger
}

// Relister relists the runtime.
type Relister struct {
	cfg  Config
	last map[types.UID]map[string]runtime.State // each pod's containers' states at the last relist
}

// New makes a relister; Run starts it.
func New(cfg Config) *Relister { return &Relister{cfg: cfg} }

// Run relists every period until ctx ends.
func (r *Relister) Run(ctx context.Context) {
	tick := time.NewTicker(r.cfg.Period)
	defer tick.Stop()
	for {
		if err := r.relist(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Log.Error("relist", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (r *Relister) relist(ctx context.Context) error {
	containers, err := r.cfg.Runtime.ListContainers(ctx, "")
	if err != nil {
		return fmt.Errorf("relist containers: %w", err)
	}
	now := map[types.UID]map[string]runtime.State{}
	for _, c := range containers {
		uid := types.UID(c.PodUID)
		if now[uid] == nil {
			now[uid] = map[string]runtime.State{}
		}
		now[uid][c.ID] = c.State
	}
	for uid := range now {
		if syncWorthy(r.last[uid], now[uid]) {
			r.cfg.Wake(uid)
		}
	}
	for uid, was := range r.last {
		if _, ok := now[uid]; !ok && syncWorthy(was, nil) {
			r.cfg.Wake(uid)
		}
	}
	r.last = now

	running := map[string]bool{}
	for _, c := range containers {
		if c.Sandbox && c.State == runtime.StateRunning {
			running[c.PodUID] = true
		}
	}
	r.cfg.Running.Set(float64(len(running)))
	return nil
}

// syncWorthy tells whether a pod's containers changed in a way its worker must hear of: a
// container new or in another state, or gone without having been seen exited. One that
// exited before and is now removed (minilet's own clean-up of dead containers) is not, as
// the kubelet's generic PLEG reports it as ContainerRemoved only, which isSyncPodWorthy
// leaves out.
func syncWorthy(was, now map[string]runtime.State) bool {
	for id, state := range now {
		if old, ok := was[id]; !ok || old != state {
			return true
		}
	}
	for id, state := range was {
		if _, ok := now[id]; !ok && state != runtime.StateExited {
			return true
		}
	}
	return false
}
