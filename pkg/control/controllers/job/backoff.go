package job

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Back-off between the recreations of failed pods, as kube-controller-manager's: 10s after
// the first failure, doubled after each further one, at most ten minutes.
const (
	podFailureBackoff    = 10 * time.Second
	maxPodFailureBackoff = 10 * time.Minute
)

// backoff is how long after the n-th consecutive failure the next pod may be created.
func backoff(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := podFailureBackoff
	for i := 1; i < failures && d < maxPodFailureBackoff; i++ {
		d *= 2
	}
	return min(d, maxPodFailureBackoff)
}

// backoffLeft is how much of the back-off after the n-th consecutive failure, the last at
// lastFailure, is still to wait at now.
func backoffLeft(failures int, lastFailure, now time.Time) time.Duration {
	return max(lastFailure.Add(backoff(failures)).Sub(now), 0)
}

// recordFinished updates the Job's consecutive failures with the pods counted in one sync,
// as Kubernetes does: a success resets them, but failures that ended after the latest
// success still count, and the back-off runs from when the last failed pod ended.
func (st *jobState) recordFinished(succeeded, failed []*corev1.Pod) {
	var lastSuccess time.Time
	if len(succeeded) > 0 {
		st.failures, st.lastFailure = 0, time.Time{}
		for _, p := range succeeded {
			lastSuccess = later(lastSuccess, finishedTime(p))
		}
	}
	for _, p := range failed {
		if t := finishedTime(p); t.After(lastSuccess) {
			st.failures++
			st.lastFailure = later(st.lastFailure, t)
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// finishedTime is when a pod ended, looked up as Kubernetes does: the last of its
// containers' (and sidecars') finish times, else when it stopped being Ready, else when it
// was deleted, else its creation.
func finishedTime(p *corev1.Pod) time.Time {
	if t, ok := containersFinished(p); ok {
		return t
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		return p.DeletionTimestamp.Add(-time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// containersFinished is the last finish time of the pod's containers and sidecars, when
// every one of them has one.
func containersFinished(p *corev1.Pod) (time.Time, bool) {
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		sidecars[c.Name] = ptr.Deref(c.RestartPolicy, "") == corev1.ContainerRestartPolicyAlways
	}
	statuses := slices.Clone(p.Status.ContainerStatuses) // the cache's pod stays as it is
	for _, s := range p.Status.InitContainerStatuses {
		if sidecars[s.Name] {
			statuses = append(statuses, s)
		}
	}
	var last time.Time
	for _, s := range statuses {
		if s.State.Terminated == nil || s.State.Terminated.FinishedAt.IsZero() {
			return time.Time{}, false
		}
		last = later(last, s.State.Terminated.FinishedAt.Time)
	}
	return last, !last.IsZero()
}
