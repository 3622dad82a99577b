package agent

import (
	"context"
	"log/slog"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/agent/podsync"
	"github.com/minik8s/minik8s/pkg/stats"
)

// Dependencies are the real things the agent drives. cmd/minilet builds them (containerd,
// CNI, the stats collector, the API clients), as the kubelet's Dependencies; tests build fakes.
type Dependencies struct {
	Client   kubernetes.Interface // the API server, for all but events
	Recorder record.EventRecorder // events, through a client with a rate limit of its own
	Runtime  podsync.Runtime      // the container runtime (containerd)
	Network  podsync.Network      // pod network namespaces and CNI
	Stats    StatsSource          // the node's usage; nil: none (no pressure conditions)
	Clock    clock.WithTicker     // nil: the real clock
	Log      *slog.Logger         // nil: slog.Default()
}

// StatsSource is pkg/stats' collector: the latest sample of the node's usage, and a
// fresh one on demand.
type StatsSource interface {
	Latest() *stats.Snapshot
	Sample(ctx context.Context)
}
