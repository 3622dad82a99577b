// Package ttlafterfinished deletes finished Jobs once their ttlSecondsAfterFinished has
// passed, as kube-controller-manager's ttl-after-finished controller does.
package ttlafterfinished

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	"github.com/minik8s/minik8s/internal/jobutil"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Name is the controller's name.
const Name = "ttl-after-finished-controller"

// Controller deletes expired finished Jobs.
type Controller struct {
	client kubernetes.Interface
	jobs   batchlisters.JobLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	clock  clock.WithTicker
	log    *slog.Logger
}

// New wires the controller to the shared Job informer.
func New(client kubernetes.Interface, jobs batchinformers.JobInformer, clk clock.WithTicker, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		client: client, jobs: jobs.Lister(), synced: jobs.Informer().HasSynced,
		queue: workloop.NewQueueWithClock[string]("ttl_jobs_to_delete", clk),
		clock: clk, log: log,
	}
	_, err := jobs.Informer().AddEventHandler(workloop.OnAddOrUpdate(c.enqueue))
	return c, err
}

func (c *Controller) enqueue(obj any) {
	if j, ok := obj.(*batchv1.Job); ok && needsCleanup(j) {
		if key, err := cache.MetaNamespaceKeyFunc(j); err == nil {
			c.queue.Add(key)
		}
	}
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced)
}

// needsCleanup: a finished Job with a TTL that is not already being deleted.
func needsCleanup(j *batchv1.Job) bool {
	return j.Spec.TTLSecondsAfterFinished != nil && j.DeletionTimestamp == nil && jobutil.Finished(j)
}

// left is how long the Job has to live; <= 0 once expired. A Job whose finish time is not
// known is an error, retried, as in kube's processTTL: it is never deleted at once.
func (c *Controller) left(j *batchv1.Job) (time.Duration, error) {
	at, ok := jobutil.FinishTime(j)
	if !ok {
		return 0, fmt.Errorf("unable to find the time when the Job %s/%s finished", j.Namespace, j.Name)
	}
	return at.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second).Sub(c.clock.Now()), nil
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	j, found, err := workloop.Lookup(key, c.jobs.Jobs)
	if !found || !needsCleanup(j) {
		return 0, err
	}
	if left, err := c.left(j); err != nil || left > 0 {
		return left, err
	}
	// The cache may be behind a change of the TTL: decide on the Job as it is now.
	fresh, err := c.client.BatchV1().Jobs(j.Namespace).Get(ctx, j.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !needsCleanup(fresh) {
		return 0, nil
	}
	if left, err := c.left(fresh); err != nil || left > 0 {
		return left, err
	}
	// Foreground, as Kubernetes does: the Job goes once its pods are gone.
	err = c.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
		Preconditions:     &metav1.Preconditions{UID: &fresh.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("delete expired job %s: %w", key, err)
	}
	c.log.Info("deleted finished job after its TTL", "job", key)
	return 0, nil
}
