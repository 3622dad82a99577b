package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/control/scheduler/queue"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ErrNoNodesAvailable is kube-scheduler's wording for a cluster without nodes.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

func metav1LabelSelector(c corev1.TopologySpreadConstraint) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(c.LabelSelector)
}

// fail sends the pod back to the queue (parked until an event for the plugins that
// rejected it, or backing off on errors), emits FailedScheduling and records
// PodScheduled=False (and the nominated node after a preemption) in its status.
func (s *Scheduler) fail(ctx context.Context, prof *profile, qp *queue.QueuedPodInfo, cycle int64, err error, nominated string, start time.Time) {
	pod := qp.Pod
	reason, result := corev1.PodReasonUnschedulable, "unschedulable"
	var fit *framework.FitError
	switch {
	case errors.As(err, &fit):
		qp.UnschedulablePlugins = fit.Diagnosis.UnschedulablePlugins
	case errors.Is(err, ErrNoNodesAvailable):
		qp.UnschedulablePlugins = nil
	default:
		reason, result = "SchedulerError", "error"
		qp.UnschedulablePlugins = nil
		s.log.Warn("scheduling failed", "pod", queue.Key(pod), "err", err)
	}
	s.metrics.attempts.WithLabelValues(result, prof.ProfileName).Inc()
	s.metrics.attemptDur.WithLabelValues(result, prof.ProfileName).Observe(time.Since(start).Seconds())
	if nominated != "" {
		p := pod.DeepCopy()
		p.Status.NominatedNodeName = nominated
		s.nominated.set(p) // before the status update comes back through the informer
	}
	s.queue.AddUnschedulable(qp, cycle)
	msg := err.Error()
	prof.recorder.Eventf(pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Scheduling", "%s", msg)
	go s.recordUnschedulable(ctx, pod, reason, msg, nominated)
}

// recordUnschedulable writes PodScheduled=False with the reason and message, as
// kube-scheduler does, so `kubectl describe` shows why the pod waits; unchanged
// conditions are not written again.
func (s *Scheduler) recordUnschedulable(ctx context.Context, pod *corev1.Pod, reason, msg, nominated string) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == reason && c.Message == msg && c.ObservedGeneration == pod.Generation &&
			nominated == pod.Status.NominatedNodeName {
			return
		}
	}
	p := pod.DeepCopy()
	// The pod's generation observed, as kube-scheduler's condition carries it since
	// PodObservedGenerationTracking (on by default from 1.34).
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: msg, LastTransitionTime: metav1.Now(),
		ObservedGeneration: pod.Generation}
	replaced := false
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			if c.Status == corev1.ConditionFalse {
				cond.LastTransitionTime = c.LastTransitionTime
			}
			p.Status.Conditions[i], replaced = cond, true
		}
	}
	if !replaced {
		p.Status.Conditions = append(p.Status.Conditions, cond)
	}
	if nominated != "" {
		p.Status.NominatedNodeName = nominated
	}
	if _, err := s.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		s.log.Debug("could not record unschedulable condition", "pod", queue.Key(p), "err", err)
	}
}
