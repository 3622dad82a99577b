package job

import (
	"context"
	"fmt"

	"github.com/minik8s/minik8s/internal/controller/controllerref"
	"github.com/minik8s/minik8s/internal/jobutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// claimPods returns the Job's pods, adopting matching orphans with the tracking finalizer
// (so their end is counted) and releasing pods relabelled out of its selector, as kube's
// job controller does through its ref manager.
func (c *Controller) claimPods(ctx context.Context, job *batchv1.Job, all []*corev1.Pod) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("selector of job %s/%s: %w", job.Namespace, job.Name, err)
	}
	owned, err := controllerref.Claim(ctx, job, jobKind, c.client.BatchV1().Jobs(job.Namespace).Get, selector, all, func(ctx context.Context, pod *corev1.Pod, patch []byte) error {
		_, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}, batchv1.JobTrackingFinalizer)
	if err != nil {
		return nil, err
	}
	for i, p := range owned {
		if metav1.GetControllerOfNoCopy(p) == nil && !hasTrackingFinalizer(p) {
			// Just adopted: the API now holds it with our finalizer; count it so.
			p = p.DeepCopy()
			p.Finalizers = append(p.Finalizers, batchv1.JobTrackingFinalizer)
			owned[i] = p
		}
	}
	return owned, nil
}

// matchingJobs is the unfinished Jobs of the pod's namespace whose selector matches it:
// those that would adopt it as an orphan.
func (c *Controller) matchingJobs(pod *corev1.Pod) []*batchv1.Job {
	jobs, err := c.jobs.Jobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*batchv1.Job
	for _, job := range jobs {
		sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) && !jobutil.Finished(job) && job.DeletionTimestamp == nil {
			out = append(out, job)
		}
	}
	return out
}
