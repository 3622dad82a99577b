package agent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/agent/imagegc"
)

// imageGCPeriod is the kubelet's: the image filesystem is checked every 5 minutes.
const imageGCPeriod = 5 * time.Minute

// runImageGC removes unused images whenever the image filesystem is fuller than
// --image-gc-high-threshold, reporting a failure on the Node as the kubelet does.
func (a *Agent) runImageGC(ctx context.Context, gc *imagegc.Collector) {
	tick := time.NewTicker(imageGCPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := gc.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
			a.nodeEvent(corev1.EventTypeWarning, "ImageGCFailed", "%s", err.Error())
		}
	}
}
