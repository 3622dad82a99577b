package job

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/minik8s/minik8s/internal/controller/templatepod"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	endpointsliceutil "k8s.io/endpointslice/util"
)

// completionIndexEnv is the variable Indexed Jobs' containers read their index from.
const completionIndexEnv = "JOB_COMPLETION_INDEX"

// maxGeneratedNameLength leaves room for the 5 random characters the API server appends.
const maxGeneratedNameLength = 58

var jobKind = batchv1.SchemeGroupVersion.WithKind("Job")

// newPod is a pod of the Job from its template, owned by the Job and held by the
// job-tracking finalizer until the controller has counted it. index < 0 for NonIndexed Jobs.
// An Indexed pod carries its index in an annotation and a label, reads it from the
// JOB_COMPLETION_INDEX variable (through the downward API, as Kubernetes injects it) and
// gets the hostname <job>-<index>.
func newPod(job *batchv1.Job, index int) *corev1.Pod {
	pod := templatepod.New(&job.Spec.Template, job, jobKind)
	if !hasTrackingFinalizer(pod) {
		pod.Finalizers = append(pod.Finalizers, batchv1.JobTrackingFinalizer)
	}
	if index < 0 {
		return pod
	}
	idx := strconv.Itoa(index)
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = idx
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = idx
	prefix := fmt.Sprintf("%s-%d-", job.Name, index)
	if over := len(prefix) - maxGeneratedNameLength; over > 0 {
		prefix = fmt.Sprintf("%s-%d-", job.Name[:len(job.Name)-over], index)
	}
	pod.GenerateName = prefix
	if pod.Spec.Hostname == "" {
		pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, index)
	}
	for i := range pod.Spec.InitContainers {
		addIndexEnv(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		addIndexEnv(&pod.Spec.Containers[i])
	}
	return pod
}

// addIndexEnv gives c JOB_COMPLETION_INDEX from the pod's index label, as kube's job
// controller does since PodIndexLabel (GA in 1.32; the annotation before).
func addIndexEnv(c *corev1.Container) {
	for _, e := range c.Env {
		if e.Name == completionIndexEnv {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: completionIndexEnv, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation)},
	}})
}

// podIndex is an Indexed pod's completion index, or -1 when it has none in [0, completions).
func podIndex(pod *corev1.Pod, completions int) int {
	v, ok := pod.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = pod.Labels[batchv1.JobCompletionIndexAnnotation]
	}
	i, err := strconv.Atoi(v)
	if !ok || err != nil || i < 0 || i >= completions {
		return -1
	}
	return i
}

func hasTrackingFinalizer(pod *corev1.Pod) bool {
	return slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer)
}

// podFailed says whether the Job counts pod as failed: its phase says so, or (unless the
// Job replaces only Failed pods) it is being deleted before it succeeded, as an orphan on a
// lost node never reaches the Failed phase.
func podFailed(pod *corev1.Pod, job *batchv1.Job) bool {
	if pod.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailedPods(job) {
		return false
	}
	return pod.DeletionTimestamp != nil && pod.Status.Phase != corev1.PodSucceeded
}

// onlyReplaceFailedPods: the Job replaces a pod only once it has failed, not while it
// terminates (podReplacementPolicy Failed, which a podFailurePolicy implies), as Kubernetes'.
func onlyReplaceFailedPods(job *batchv1.Job) bool {
	p := job.Spec.PodReplacementPolicy
	return p != nil && *p == batchv1.Failed || job.Spec.PodFailurePolicy != nil
}

// podActive is a pod that is neither finished nor being deleted.
func podActive(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// podTerminating is a pod being deleted that has not reached a terminal phase yet.
func podTerminating(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// restarts sums the container restarts of a pod, which count against backoffLimit when the
// template restarts containers in place (restartPolicy OnFailure).
func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, s := range pod.Status.InitContainerStatuses {
		n += s.RestartCount
	}
	for _, s := range pod.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// deletionRank orders pods to delete when there are too many: unscheduled first, then
// pending, then not ready, then the newest, as kube-controller-manager ranks them.
func deletionRank(a, b *corev1.Pod) int {
	rank := func(p *corev1.Pod) int {
		switch {
		case p.Spec.NodeName == "":
			return 0
		case p.Status.Phase == corev1.PodPending:
			return 1
		case !endpointsliceutil.IsPodReady(p):
			return 2
		}
		return 3
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
}
