package job

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// trackingFinalizer keeps a finished pod until the Job has counted it.
const trackingFinalizer = batchv1.JobTrackingFinalizer

// state is one sync's view of a Job and its pods.
type state struct {
	job                     *batchv1.Job
	active                  []*corev1.Pod
	owned                   []*corev1.Pod
	newSucceeded, newFailed []*corev1.Pod // finished, still holding our finalizer, not yet counted
	ignored                 []*corev1.Pod // finished, released without being counted
	succeededIdx            map[int]bool  // Indexed: completed indexes (status and new pods)
	activeIdx               map[int]bool
	lastFailure             time.Time
	failJobMessage          string // set by a FailJob rule of the podFailurePolicy
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	cached, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Its pods must not wait for a Job that is gone to count them.
		orphans, err := c.orphansOf(ns, name)
		if err != nil {
			return 0, err
		}
		return 0, c.removeFinalizers(ctx, orphans)
	}
	if err != nil {
		return 0, err
	}
	job := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return 0, nil
	}
	pods, err := c.pods.Pods(ns).List(selector)
	if err != nil {
		return 0, err
	}
	st := c.observe(job, owned(job, pods))

	// Count the newly finished pods: record them as uncounted, release their finalizers,
	// then add them to the totals (three steps, so a crash in between loses nothing).
	if err := c.countFinished(ctx, st); err != nil {
		return 0, err
	}
	if finished(job) {
		return 0, c.removeFinalizers(ctx, st.owned)
	}
	now := c.clock.Now()
	if job.Status.StartTime == nil && !ptr.Deref(job.Spec.Suspend, false) {
		job.Status.StartTime = &metav1.Time{Time: now}
	}

	var again time.Duration
	switch failure, message := c.failure(st, now); {
	case failure != "":
		if err := c.deleteActive(ctx, job, st.active); err != nil {
			return 0, err
		}
		st.active = nil
		c.finish(job, batchv1.JobFailed, batchv1.JobFailureTarget, failure, message, now)
		c.recorder.Event(job, corev1.EventTypeWarning, failure, message)
	case c.complete(st):
		c.finish(job, batchv1.JobComplete, batchv1.JobSuccessCriteriaMet, "CompletionsReached", "Reached expected number of succeeded pods", now)
		c.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
	case ptr.Deref(job.Spec.Suspend, false):
		if err := c.deleteActive(ctx, job, st.active); err != nil {
			return 0, err
		}
		st.active = nil
		if setCondition(job, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now) {
			c.recorder.Event(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
		}
		job.Status.StartTime = nil
	default:
		if setCondition(job, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", now) {
			c.recorder.Event(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
		}
		again, err = c.manage(ctx, key, st, now)
		if err != nil {
			return 0, err
		}
		if d := job.Spec.ActiveDeadlineSeconds; d != nil && job.Status.StartTime != nil {
			left := job.Status.StartTime.Add(time.Duration(*d) * time.Second).Sub(now)
			if again == 0 || left < again {
				again = max(left, time.Millisecond)
			}
		}
	}
	job.Status.Active = int32(len(st.active))
	job.Status.Ready = ptr.To(int32(countReady(st.active)))
	if isIndexed(job) {
		job.Status.CompletedIndexes = formatIndexes(st.succeededIdx)
	}
	if !equality.Semantic.DeepEqual(job.Status, cached.Status) {
		if _, err := c.client.BatchV1().Jobs(ns).UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
			return 0, err
		}
	}
	return again, nil
}

// owned are the pods this Job controls.
func owned(job *batchv1.Job, pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == job.UID {
			out = append(out, p)
		}
	}
	return out
}

func isIndexed(job *batchv1.Job) bool {
	return ptr.Deref(job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
}

func finished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// observe sorts the pods: active, and the finished ones not yet counted.
func (c *Controller) observe(job *batchv1.Job, pods []*corev1.Pod) *state {
	st := &state{job: job, succeededIdx: parseIndexes(job.Status.CompletedIndexes), activeIdx: map[int]bool{}, owned: pods}
	uncounted := map[types.UID]bool{}
	if u := job.Status.UncountedTerminatedPods; u != nil {
		for _, uid := range append(slices.Clone(u.Succeeded), u.Failed...) {
			uncounted[uid] = true
		}
	}
	suspended := ptr.Deref(job.Spec.Suspend, false)
	for _, p := range pods {
		fresh := hasFinalizer(p) && !uncounted[p.UID]
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			if idx, ok := podIndex(p); ok {
				st.succeededIdx[idx] = true
			}
			if fresh {
				st.newSucceeded = append(st.newSucceeded, p)
			}
		case p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil:
			// A pod deleted before it finished counts as failed (it may never reach
			// Failed), unless the Job deleted it for being suspended.
			if t := finishTime(p); t.After(st.lastFailure) {
				st.lastFailure = t
			}
			if !fresh {
				continue
			}
			if suspended && p.Status.Phase != corev1.PodFailed {
				st.ignored = append(st.ignored, p)
				continue
			}
			switch action, msg := matchFailurePolicy(job, p); action {
			case batchv1.PodFailurePolicyActionFailJob:
				st.failJobMessage = msg
				st.newFailed = append(st.newFailed, p)
			case batchv1.PodFailurePolicyActionIgnore:
				st.ignored = append(st.ignored, p)
			default:
				st.newFailed = append(st.newFailed, p)
			}
		default:
			st.active = append(st.active, p)
			if idx, ok := podIndex(p); ok {
				st.activeIdx[idx] = true
			}
		}
	}
	return st
}

func hasFinalizer(p *corev1.Pod) bool { return slices.Contains(p.Finalizers, trackingFinalizer) }

// finishTime is when the pod's last container ended, or when it was deleted.
func finishTime(p *corev1.Pod) time.Time {
	var t time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if term := cs.State.Terminated; term != nil && term.FinishedAt.After(t) {
			t = term.FinishedAt.Time
		}
	}
	if t.IsZero() && p.DeletionTimestamp != nil {
		t = p.DeletionTimestamp.Time
	}
	return t
}

func podIndex(p *corev1.Pod) (int, bool) {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(v)
	return i, err == nil && i >= 0
}

func countReady(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// countFinished moves newly finished pods into the counts: first recorded as uncounted in
// the status, then their finalizers released, then added to succeeded and failed.
func (c *Controller) countFinished(ctx context.Context, st *state) error {
	job := st.job
	u := job.Status.UncountedTerminatedPods
	if u == nil {
		u = &batchv1.UncountedTerminatedPods{}
	}
	if len(st.newSucceeded)+len(st.newFailed) > 0 {
		for _, p := range st.newSucceeded {
			u.Succeeded = append(u.Succeeded, p.UID)
		}
		for _, p := range st.newFailed {
			u.Failed = append(u.Failed, p.UID)
		}
		job.Status.UncountedTerminatedPods = u
		if err := c.writeStatus(ctx, st); err != nil {
			return err
		}
	}
	recorded := map[types.UID]bool{}
	for _, uid := range append(slices.Clone(u.Succeeded), u.Failed...) {
		recorded[uid] = true
	}
	var release []*corev1.Pod
	for _, p := range st.owned {
		if hasFinalizer(p) && recorded[p.UID] {
			release = append(release, p)
		}
	}
	if err := c.removeFinalizers(ctx, append(release, st.ignored...)); err != nil {
		return err
	}
	if len(u.Succeeded)+len(u.Failed) == 0 {
		return nil
	}
	job.Status.Succeeded += int32(len(u.Succeeded))
	job.Status.Failed += int32(len(u.Failed))
	job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	return c.writeStatus(ctx, st)
}

// writeStatus stores the Job's status now (mid-sync), keeping st.job current.
func (c *Controller) writeStatus(ctx context.Context, st *state) error {
	updated, err := c.client.BatchV1().Jobs(st.job.Namespace).UpdateStatus(ctx, st.job, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	*st.job = *updated
	return nil
}

// removeFinalizers lets the counted (or ignored) pods go.
func (c *Controller) removeFinalizers(ctx context.Context, pods []*corev1.Pod) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"$deleteFromPrimitiveList/finalizers": []string{trackingFinalizer}}})
	for _, p := range pods {
		if !hasFinalizer(p) {
			continue
		}
		_, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove the job-tracking finalizer of pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// failure says why the Job fails now, if it does.
func (c *Controller) failure(st *state, now time.Time) (reason, message string) {
	job := st.job
	switch {
	case st.failJobMessage != "":
		return "PodFailurePolicy", st.failJobMessage
	case job.Status.Failed > ptr.Deref(job.Spec.BackoffLimit, 6):
		return "BackoffLimitExceeded", "Job has reached the specified backoff limit"
	case job.Spec.ActiveDeadlineSeconds != nil && job.Status.StartTime != nil &&
		!now.Before(job.Status.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second)):
		return "DeadlineExceeded", "Job was active longer than specified deadline"
	}
	return "", ""
}

// complete: enough pods succeeded (every index, for Indexed); without completions, one
// succeeded and none is left running.
func (c *Controller) complete(st *state) bool {
	job := st.job
	if job.Spec.Completions == nil {
		return job.Status.Succeeded > 0 && len(st.active) == 0
	}
	want := *job.Spec.Completions
	if isIndexed(job) {
		n := int32(0)
		for i := range st.succeededIdx {
			if i < int(want) {
				n++
			}
		}
		return n >= want
	}
	return job.Status.Succeeded >= want
}

// finish sets the interim condition (SuccessCriteriaMet or FailureTarget) and the final one.
func (c *Controller) finish(job *batchv1.Job, final, interim batchv1.JobConditionType, reason, message string, now time.Time) {
	setCondition(job, interim, corev1.ConditionTrue, reason, message, now)
	setCondition(job, final, corev1.ConditionTrue, reason, message, now)
	if final == batchv1.JobComplete {
		job.Status.CompletionTime = &metav1.Time{Time: now}
	}
}

// setCondition sets a condition and reports whether it changed (a missing condition set
// to False is not added: a Job that was never suspended has no Suspended condition).
func setCondition(job *batchv1.Job, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) bool {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status == status {
			return false
		}
		c.Status, c.Reason, c.Message = status, reason, message
		c.LastProbeTime, c.LastTransitionTime = metav1.NewTime(now), metav1.NewTime(now)
		return true
	}
	if status == corev1.ConditionFalse {
		return false
	}
	job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{Type: t, Status: status, Reason: reason, Message: message,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)})
	return true
}

// deleteActive deletes the Job's running pods (failed, or suspended).
func (c *Controller) deleteActive(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) error {
	for _, p := range pods {
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		c.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
	}
	return nil
}

// manage creates pods up to parallelism (after the back-off of earlier failures) or deletes
// surplus ones.
func (c *Controller) manage(ctx context.Context, key string, st *state, now time.Time) (time.Duration, error) {
	job := st.job
	if c.creationsPending(key) {
		return 0, nil // the informer has not seen our last creations yet
	}
	parallelism := int(ptr.Deref(job.Spec.Parallelism, 1))
	var indexes []int // Indexed: the indexes to start
	want := parallelism
	switch {
	case isIndexed(job):
		for i := 0; i < int(ptr.Deref(job.Spec.Completions, 0)) && len(indexes) < parallelism-len(st.active); i++ {
			if !st.succeededIdx[i] && !st.activeIdx[i] {
				indexes = append(indexes, i)
			}
		}
		want = len(st.active) + len(indexes)
	case job.Spec.Completions != nil:
		want = min(parallelism, int(*job.Spec.Completions-job.Status.Succeeded))
	case job.Status.Succeeded > 0:
		want = len(st.active) // work queue: once one succeeded, no new pods
	}
	if diff := len(st.active) - want; diff > 0 {
		return 0, c.deleteActive(ctx, job, newest(st.active, diff))
	}
	n := want - len(st.active)
	if n <= 0 {
		return 0, nil
	}
	if wait := backoff(job.Status.Failed) - now.Sub(st.lastFailure); job.Status.Failed > 0 && wait > 0 {
		return wait, nil
	}
	c.expectCreates(key, n)
	for i := range n {
		idx := -1
		if indexes != nil {
			idx = indexes[i]
		}
		created, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, podFor(job, idx), metav1.CreateOptions{})
		if err != nil {
			for range n - i {
				c.creationFailed(key)
			}
			c.recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
			return 0, err
		}
		c.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	}
	return 0, nil
}

func newest(pods []*corev1.Pod, n int) []*corev1.Pod {
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b *corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	return sorted[:min(n, len(sorted))]
}

// podFor is a new pod of the Job: the template, the Job as controller, the tracking
// finalizer, and for Indexed Jobs the index (annotation, label, hostname, and the
// JOB_COMPLETION_INDEX variable from the annotation).
func podFor(job *batchv1.Job, index int) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    job.Name + "-",
			Namespace:       job.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      append(t.Finalizers, trackingFinalizer),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, kind)},
		},
		Spec: t.Spec,
	}
	if index < 0 {
		return pod
	}
	idx := strconv.Itoa(index)
	pod.GenerateName = fmt.Sprintf("%s-%d-", job.Name, index)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = idx
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = idx
	if pod.Spec.Hostname == "" {
		pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, index)
	}
	env := corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation)}}}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cs[i].Env = append(cs[i].Env, env)
		}
	}
	return pod
}

// orphansOf lists the pods of a deleted Job that still hold its finalizer.
func (c *Controller) orphansOf(ns, name string) ([]*corev1.Pod, error) {
	return c.pods.Pods(ns).List(labels.SelectorFromSet(labels.Set{batchv1.JobNameLabel: name}))
}
