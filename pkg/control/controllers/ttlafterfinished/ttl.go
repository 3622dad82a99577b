// Package ttlafterfinished deletes finished Jobs once their ttlSecondsAfterFinished has
// passed, with their pods, as kube-controller-manager's ttl-after-finished controller does.
package ttlafterfinished

import (
	"context"
	"log/slog"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controllers/workloop"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Controller is the ttl-after-finished controller.
type Controller struct {
	client kubernetes.Interface
	jobs   batchlisters.JobLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	clock  clock.Clock
	log    *slog.Logger
}

// New wires the controller to the shared Job informer.
func New(client kubernetes.Interface, jobs batchinformers.JobInformer, log *slog.Logger) (*Controller, error) {
	c := &Controller{client: client, jobs: jobs.Lister(), synced: jobs.Informer().HasSynced, clock: clock.RealClock{}, log: log,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "ttl_jobs_to_delete"})}
	enqueue := func(obj any) {
		if j, ok := obj.(*batchv1.Job); ok && j.Spec.TTLSecondsAfterFinished != nil {
			if key, err := cache.MetaNamespaceKeyFunc(j); err == nil {
				c.queue.Add(key)
			}
		}
	}
	_, err := jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }})
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	workloop.Run(ctx, c.queue, c.log, c.sync)
}

// finishedAt is when the Job completed or failed, if it has.
func finishedAt(j *batchv1.Job) (time.Time, bool) {
	for _, cond := range j.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			return cond.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	j, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil || j.DeletionTimestamp != nil || j.Spec.TTLSecondsAfterFinished == nil {
		return 0, err
	}
	done, ok := finishedAt(j)
	if !ok {
		return 0, nil
	}
	if left := done.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second).Sub(c.clock.Now()); left > 0 {
		return left, nil
	}
	// Delete only the Job we judged: it may have been recreated under the same name.
	err = c.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &j.UID}, PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return 0, nil
	}
	if err == nil {
		c.log.Info("deleted a finished job after its TTL", "job", key)
	}
	return 0, err
}
