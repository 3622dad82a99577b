// Package job runs Jobs to completion as kube-controller-manager's job controller does:
// pods from the template up to parallelism until completions succeed (NonIndexed or
// Indexed), failures retried with exponential back-off up to backoffLimit, under
// activeDeadlineSeconds, a podFailurePolicy and suspend; finished pods are counted through
// the batch.kubernetes.io/job-tracking finalizer so none is lost or counted twice.
package job

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controllers/workloop"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

var kind = batchv1.SchemeGroupVersion.WithKind("Job")

// Controller is the job controller.
type Controller struct {
	client   kubernetes.Interface
	jobs     batchlisters.JobLister
	pods     corelisters.PodLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	clock    clock.Clock
	log      *slog.Logger
	// pending counts pod creations per Job not yet seen in the informer, so a burst of
	// events does not create a pod twice.
	mu      sync.Mutex
	pending map[string]int
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, jobs batchinformers.JobInformer, pods coreinformers.PodInformer, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		client: client, jobs: jobs.Lister(), pods: pods.Lister(),
		synced: []cache.InformerSynced{jobs.Informer().HasSynced, pods.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "job"}),
		recorder: recorder, clock: clock.RealClock{}, log: log, pending: map[string]int{},
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}); err != nil {
		return nil, err
	}
	onPod := func(obj any, created bool) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == kind.Kind {
			key := pod.Namespace + "/" + ref.Name
			if created {
				c.mu.Lock()
				if c.pending[key] > 0 {
					c.pending[key]--
				}
				c.mu.Unlock()
			}
			c.queue.Add(key)
		}
	}
	_, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { onPod(obj, true) },
		UpdateFunc: func(_, obj any) { onPod(obj, false) },
		DeleteFunc: func(obj any) { onPod(obj, false) },
	})
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	for range 5 {
		go workloop.Run(ctx, c.queue, c.log, c.sync)
	}
	<-ctx.Done()
}

func (c *Controller) expectCreates(key string, n int) {
	c.mu.Lock()
	c.pending[key] += n
	c.mu.Unlock()
}

func (c *Controller) creationsPending(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[key] > 0
}

func (c *Controller) creationFailed(key string) {
	c.mu.Lock()
	if c.pending[key] > 0 {
		c.pending[key]--
	}
	c.mu.Unlock()
}

// backoff is the delay before the next pod after failures: 10 s doubling, at most 6 min.
func backoff(failures int32) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := 10 * time.Second
	for i := int32(1); i < failures && d < 6*time.Minute; i++ {
		d *= 2
	}
	return min(d, 6*time.Minute)
}
