// Package pleg notices container changes (an exit, a container gone) by listing the
// runtime every period and waking the workers of the pods whose containers changed, as
// the kubelet's generic PLEG (pod lifecycle event generator). It also counts the pods
// running.
package pleg

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
	last map[types.UID]string // fingerprint of each pod's containers at the last relist
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
	now := fingerprints(containers)
	for uid, fp := range now {
		if r.last[uid] != fp {
			r.cfg.Wake(uid)
		}
	}
	for uid := range r.last {
		if _, ok := now[uid]; !ok {
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

// fingerprints sums up each pod's containers (id and state) so a change shows.
func fingerprints(containers []runtime.Container) map[types.UID]string {
	parts := map[types.UID][]string{}
	for _, c := range containers {
		uid := types.UID(c.PodUID)
		parts[uid] = append(parts[uid], c.ID+"="+string(c.State))
	}
	out := make(map[types.UID]string, len(parts))
	for uid, p := range parts {
		slices.Sort(p)
		out[uid] = strings.Join(p, ",")
	}
	return out
}
