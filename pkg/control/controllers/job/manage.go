package job

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// managePods creates or deletes pods so that as many run as the Job wants now. It returns
// how long to wait when the back-off holds the creation of replacements back, and the first
// creation or deletion the API refused.
func (c *Controller) managePods(ctx context.Context, s *syncCtx) (time.Duration, error) {
	job := s.job
	parallelism := int(ptr.Deref(job.Spec.Parallelism, 1))
	var want int
	switch {
	case s.indexed:
		want = min(parallelism, s.completions-len(s.completed)-len(s.failed))
	case job.Spec.Completions != nil:
		want = min(parallelism, max(s.completions-int(job.Status.Succeeded), 0))
	case job.Status.Succeeded > 0:
		want = s.activeCount() // one success ends a work queue: let the others finish
	default:
		want = parallelism
	}
	var surplusErr error
	if s.indexed {
		surplusErr = c.deletePods(ctx, s, s.surplusIndexed())
	}
	if extra := s.activeCount() - want; extra > 0 {
		victims := slices.Clone(s.active)
		slices.SortFunc(victims, deletionRank)
		return 0, errors.Join(surplusErr, c.deletePods(ctx, s, victims[:min(extra, len(victims))]))
	}
	// A Job that replaces only failed pods counts its terminating ones as still there.
	missing := want - s.activeCount() - len(s.replaceLater())
	if missing <= 0 {
		return 0, surplusErr
	}
	if s.perIndex {
		indexes, wait := s.indexesOutOfBackoff(s.freeIndexes(missing))
		return wait, errors.Join(surplusErr, c.createPods(ctx, s, indexes))
	}
	if wait := backoffLeft(s.st.failures, s.st.lastFailure, s.now.Time); wait > 0 {
		return wait, surplusErr
	}
	indexes := make([]int, missing)
	for i := range indexes {
		indexes[i] = -1
	}
	if s.indexed {
		indexes = s.freeIndexes(missing)
	}
	return 0, errors.Join(surplusErr, c.createPods(ctx, s, indexes))
}

// indexesOutOfBackoff are the indexes whose own back-off is over; when none is, it says how
// long until the first one is, as Kubernetes holds the others back meanwhile.
func (s *syncCtx) indexesOutOfBackoff(indexes []int) ([]int, time.Duration) {
	var ready []int
	var wait time.Duration
	for _, i := range indexes {
		left := time.Duration(0)
		if last := s.lastFailed[i]; last != nil {
			left = backoffLeft(allIndexFailures(last)+1, finishedTime(last), s.now.Time)
		}
		switch {
		case left == 0:
			ready = append(ready, i)
		case wait == 0 || left < wait:
			wait = left
		}
	}
	if len(ready) > 0 {
		return ready, 0
	}
	return nil, wait
}

// surplusIndexed are the active pods of an Indexed Job that must go: without a valid index,
// for an index already completed or failed, or a second one for an index; they leave
// s.active.
func (s *syncCtx) surplusIndexed() []*corev1.Pod {
	seen := map[int]bool{}
	var keep, surplus []*corev1.Pod
	for _, p := range s.active {
		i := podIndex(p, s.completions)
		if i < 0 || s.completed[i] || s.failed[i] || seen[i] {
			surplus = append(surplus, p)
			continue
		}
		seen[i] = true
		keep = append(keep, p)
	}
	s.active = keep
	return surplus
}

// freeIndexes are the n lowest indexes neither completed, failed nor held by a running or
// just-created pod.
func (s *syncCtx) freeIndexes(n int) []int {
	held := map[int]bool{}
	for _, p := range s.active {
		held[podIndex(p, s.completions)] = true
	}
	for _, p := range s.st.creating {
		held[p.index] = true
	}
	for _, p := range s.replaceLater() {
		held[podIndex(p, s.completions)] = true
	}
	var free []int
	for i := 0; i < s.completions && len(free) < n; i++ {
		if !s.completed[i] && !s.failed[i] && !held[i] {
			free = append(free, i)
		}
	}
	return free
}

// replaceLater are the terminating pods a Job that replaces only failed pods waits for.
func (s *syncCtx) replaceLater() []*corev1.Pod {
	if !onlyReplaceFailedPods(s.job) {
		return nil
	}
	var out []*corev1.Pod
	for _, p := range s.pods {
		if podTerminating(p) {
			out = append(out, p)
		}
	}
	return out
}

// createPods creates pods in batches of 1, 2, 4, ... as kube-controller-manager does, so a
// template the API refuses fails once rather than parallelism times. It returns the refusal.
func (c *Controller) createPods(ctx context.Context, s *syncCtx, indexes []int) error {
	for batch := 1; len(indexes) > 0; batch *= 2 {
		n := min(batch, len(indexes))
		for _, index := range indexes[:n] {
			if err := c.createPod(ctx, s, index); apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil // the namespace goes, and every pod with it
			} else if err != nil {
				return err
			}
		}
		indexes = indexes[n:]
	}
	return nil
}

func (c *Controller) createPod(ctx context.Context, s *syncCtx, index int) error {
	pod := newPod(s.job, index)
	if s.perIndex {
		setIndexFailures(pod, s.job, s.lastFailed[index])
	}
	pod, err := c.client.CoreV1().Pods(s.job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			c.recorder.Eventf(s.job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		}
		return err
	}
	s.st.creating[pod.Name] = pendingPod{index: index, at: s.now.Time}
	c.recorder.Eventf(s.job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", pod.Name)
	return nil
}

// deletePods deletes pods of the Job; they leave s.active at once. It returns the first
// deletion the API refused (a pod already gone is deleted).
func (c *Controller) deletePods(ctx context.Context, s *syncCtx, pods []*corev1.Pod) error {
	var first error
	for _, p := range slices.Clone(pods) { // pods may be s.active, which shrinks
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			c.recorder.Eventf(s.job, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
			if first == nil {
				first = err
			}
			continue
		}
		s.st.deleting[p.Name] = s.now.Time
		s.active = slices.DeleteFunc(s.active, func(a *corev1.Pod) bool { return a.UID == p.UID })
		if err == nil {
			c.recorder.Eventf(s.job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
		}
	}
	return first
}
