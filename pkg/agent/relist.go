package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// relister notices container changes (an exit, a container gone) by listing
// the runtime every relistPeriod and waking the workers of the pods whose
// containers changed, like the kubelet's PLEG. It also counts running pods.
type relister struct {
	last map[types.UID]string // fingerprint of each pod's containers at the last relist
}

func (r *relister) relist(ctx context.Context, a *Agent) error {
	containers, err := a.rt.ListContainers(ctx, "")
	if err != nil {
		return fmt.Errorf("relist containers: %w", err)
	}
	now := fingerprints(containers)
	for uid, fp := range now {
		if r.last[uid] != fp {
			a.workers.Wake(uid)
		}
	}
	for uid := range r.last {
		if _, ok := now[uid]; !ok {
			a.workers.Wake(uid)
		}
	}
	r.last = now

	running := map[string]bool{}
	for _, c := range containers {
		if c.Sandbox && c.State == runtime.StateRunning {
			running[c.PodUID] = true
		}
	}
	a.metrics.runningPods.Set(float64(len(running)))
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
