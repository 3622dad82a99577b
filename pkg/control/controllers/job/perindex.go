package job

import (
	"math"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// With backoffLimitPerIndex each index of an Indexed Job has its own retries and back-off.
// As in Kubernetes, a pod carries in the job-index-failure-count (and
// job-index-ignored-failure-count) annotation how many pods of its index failed before it,
// and the last failed pod of an index keeps the job-tracking finalizer until its replacement
// exists: that pod's annotations and finish time are the index's failures and back-off.

// indexFailures reads a pod's annotation count; missing or malformed counts as 0.
func indexFailures(pod *corev1.Pod, annotation string) int {
	n, err := strconv.Atoi(pod.Annotations[annotation])
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0
	}
	return n
}

// allIndexFailures counts the failures of the pod's index before it, ignored ones too.
func allIndexFailures(pod *corev1.Pod) int {
	return indexFailures(pod, batchv1.JobIndexFailureCountAnnotation) + indexFailures(pod, batchv1.JobIndexIgnoredFailureCountAnnotation)
}

// indexFailed says whether a failed pod fails its index: the podFailurePolicy says FailIndex,
// or the failure counts and its index has no retry left.
func indexFailed(job *batchv1.Job, pod *corev1.Pod) bool {
	action, _ := matchFailurePolicy(job.Spec.PodFailurePolicy, pod)
	switch {
	case action == nil:
	case *action == batchv1.PodFailurePolicyActionFailIndex:
		return true
	case *action == batchv1.PodFailurePolicyActionIgnore:
		return false
	}
	return indexFailures(pod, batchv1.JobIndexFailureCountAnnotation) >= int(*job.Spec.BackoffLimitPerIndex)
}

// setIndexFailures annotates a new pod with the failures of its index: those of the pod it
// replaces plus that pod's own, counted or ignored as the podFailurePolicy says.
func setIndexFailures(pod *corev1.Pod, job *batchv1.Job, replaced *corev1.Pod) {
	failures, ignored := 0, 0
	if replaced != nil {
		failures = indexFailures(replaced, batchv1.JobIndexFailureCountAnnotation)
		ignored = indexFailures(replaced, batchv1.JobIndexIgnoredFailureCountAnnotation)
		if action, _ := matchFailurePolicy(job.Spec.PodFailurePolicy, replaced); action != nil && *action == batchv1.PodFailurePolicyActionIgnore {
			ignored++
		} else {
			failures++
		}
	}
	pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(failures)
	if ignored > 0 {
		pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(ignored)
	}
}

// markFailedIndexes adds to s.failed the indexes whose newly finished pod failed them. Once
// the Job is finishing, its pods end because they are deleted: as in Kubernetes, which counts
// them in the same sync, they fail no index.
func (s *syncCtx) markFailedIndexes() {
	if s.finishing() {
		return
	}
	for _, p := range s.pods {
		if _, done := s.st.finalized[p.UID]; done || !hasTrackingFinalizer(p) || !s.podFailure(p) {
			continue
		}
		if i := podIndex(p, s.completions); i >= 0 && !s.completed[i] && indexFailed(s.job, p) {
			s.failed[i] = true
		}
	}
}

// lastFailedPods finds, for each index still to run and without a pod running, its latest
// failed pod: the one with the most failures before it, the latest to end among equals.
func (s *syncCtx) lastFailedPods() map[int]*corev1.Pod {
	held := map[int]bool{}
	for _, p := range s.pods {
		if _, deleting := s.st.deleting[p.Name]; podActive(p) && !deleting {
			held[podIndex(p, s.completions)] = true
		}
	}
	for _, p := range s.st.creating {
		held[p.index] = true
	}
	last := map[int]*corev1.Pod{}
	for _, p := range s.pods {
		i := podIndex(p, s.completions)
		if i < 0 || s.completed[i] || s.failed[i] || held[i] || !s.podFailure(p) {
			continue
		}
		prev := last[i]
		if prev == nil || allIndexFailures(p) > allIndexFailures(prev) ||
			(allIndexFailures(p) == allIndexFailures(prev) && !finishedTime(p).Before(finishedTime(prev))) {
			last[i] = p
		}
	}
	return last
}

// awaitsReplacement is the last failed pod of an index, which keeps its finalizer and is
// counted only once its replacement exists (or the Job is finishing).
func (s *syncCtx) awaitsReplacement(pod *corev1.Pod) bool {
	if !s.perIndex || s.finishing() {
		return false
	}
	last := s.lastFailed[podIndex(pod, s.completions)]
	return last != nil && last.UID == pod.UID
}
