package agent

import (
	"context"
	"errors"
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
	failed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := gc.GarbageCollect(ctx); ctx.Err() == nil {
			failed = reportImageGC(a.nodeEvent, err, failed)
		}
	}
}

// reportImageGC makes the Node events of a collection's outcome err and returns whether
// it failed: freeing too little is a FreeDiskSpaceFailed at once (the kubelet's
// GarbageCollect), any failure an ImageGCFailed only when the one before failed too (its
// StartGarbageCollection, which takes a first failure for stats not yet ready).
func reportImageGC(nodeEvent func(eventType, reason, format string, args ...any), err error, prevFailed bool) bool {
	if err == nil {
		return false
	}
	if insufficient := (*imagegc.InsufficientSpaceError)(nil); errors.As(err, &insufficient) {
		nodeEvent(corev1.EventTypeWarning, "FreeDiskSpaceFailed", "%s", insufficient.Message)
	}
	if prevFailed {
		nodeEvent(corev1.EventTypeWarning, "ImageGCFailed", "%s", err.Error())
	}
	return true
}
