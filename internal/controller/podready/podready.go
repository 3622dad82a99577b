// Package podready reads a pod's readiness as the workload controllers count it: Ready, and
// available once it has been Ready for the workload's minReadySeconds (kube's
// podutil.IsPodAvailable).
package podready

import (
	"iter"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Since is the pod's Ready condition and when it last changed.
func Since(p *corev1.Pod) (bool, time.Time) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

// Ready: the pod's Ready condition is True.
func Ready(p *corev1.Pod) bool {
	ready, _ := Since(p)
	return ready
}

// Available: Ready for at least minReadySeconds at now.
func Available(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	ready, since := Since(p)
	if !ready {
		return false
	}
	return minReadySeconds == 0 || (!since.IsZero() && !since.Add(time.Duration(minReadySeconds)*time.Second).After(now))
}

// NextAvailable is how long until the first of pods that is Ready but not yet available
// becomes available, or 0 if none is waiting: when a controller looks again.
func NextAvailable(pods iter.Seq[*corev1.Pod], minReadySeconds int32, now time.Time) time.Duration {
	if minReadySeconds == 0 {
		return 0
	}
	var next time.Duration
	for p := range pods {
		ready, since := Since(p)
		if !ready {
			continue
		}
		wait := time.Second // a Ready condition with no time: look again soon
		if !since.IsZero() {
			wait = since.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
		}
		if wait > 0 && (next == 0 || wait < next) {
			next = wait
		}
	}
	return next
}
