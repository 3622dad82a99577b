// Package job runs Jobs to completion, as kube-controller-manager's job controller does:
// pods from the template (Indexed or not) up to parallelism until enough succeed, failed pods
// replaced with exponential back-off until backoffLimit, activeDeadlineSeconds, suspend,
// podFailurePolicy, and every finished pod counted exactly once through the job-tracking
// finalizer and status.uncountedTerminatedPods.
package job

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
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

// Name is the controller's name in Events and --controllers.
const Name = "job-controller"

// expectationTimeout is how long a pod we created counts as active before the cache shows
// it; after that the cache is trusted again (the create may have been undone).
const expectationTimeout = time.Minute

// Controller reconciles Jobs with their pods.
type Controller struct {
	client   kubernetes.Interface
	jobs     batchlisters.JobLister
	pods     corelisters.PodLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	orphans  workqueue.TypedRateLimitingInterface[string] // pods holding our finalizer whose Job is gone
	recorder record.EventRecorder
	clock    clock.Clock
	log      *slog.Logger

	mu     sync.Mutex
	states map[string]*jobState
}

// jobState is what the controller remembers of a Job between syncs: the writes the cache
// has not shown yet (so a burst of events never creates or counts twice) and the back-off.
type jobState struct {
	uid       types.UID
	creating  map[string]pendingPod  // pods created, not yet in the cache
	deleting  map[string]time.Time   // pods deleted, still shown as active by the cache
	finalized map[types.UID]struct{} // pods counted and released, the cache still shows our finalizer
	// failures since the last success, and when the last one was seen: the back-off.
	failures    int
	lastFailure time.Time
}

type pendingPod struct {
	index int
	at    time.Time
}

// A sync that failed (a pod the API refused, a status update that conflicted) is retried
// after a back-off from apiBackoff doubling to maxAPIBackoff, kube's DefaultJobApiBackOff
// and MaxJobApiBackOff: a Job over its quota keeps asking, a minute apart at most.
const (
	apiBackoff    = time.Second
	maxAPIBackoff = time.Minute
)

// New wires the controller to the shared Job and Pod informers.
func New(client kubernetes.Interface, jobs batchinformers.JobInformer, pods coreinformers.PodInformer, recorder record.EventRecorder, clk clock.Clock, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		client: client, jobs: jobs.Lister(), pods: pods.Lister(),
		synced:   []cache.InformerSynced{jobs.Informer().HasSynced, pods.Informer().HasSynced},
		queue:    workloop.NewBackoffQueue[string]("job", apiBackoff, maxAPIBackoff, nil),
		orphans:  workloop.NewBackoffQueue[string]("job_orphan_pod", apiBackoff, maxAPIBackoff, nil),
		recorder: recorder, clock: clk, log: log,
		states: map[string]*jobState{},
	}
	onJob := workloop.OnAddOrUpdate(workloop.Enqueue(c.queue))
	onJob.DeleteFunc = c.jobDeleted
	if _, err := jobs.Informer().AddEventHandler(onJob); err != nil {
		return nil, err
	}
	_, err := pods.Informer().AddEventHandler(workloop.OnEvery(c.podChanged))
	return c, err
}

// Run works the queues until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var orphans sync.WaitGroup
	defer orphans.Wait()
	orphans.Go(func() { workloop.RunWorkers(ctx, 1, c.orphans, c.log, c.releaseOrphan, c.synced...) })
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
}

// jobDeleted forgets the Job and hands its pods to the orphan queue, which releases them.
func (c *Controller) jobDeleted(obj any) {
	workloop.Enqueue(c.queue)(obj)
	job, ok := workloop.Object[*batchv1.Job](obj)
	if !ok {
		return
	}
	pods, _ := c.pods.Pods(job.Namespace).List(labels.Everything())
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == job.UID && hasTrackingFinalizer(p) {
			c.orphans.Add(job.Namespace + "/" + p.Name)
		}
	}
}

// podChanged wakes the pod's Job, or the orphan queue for a pod that holds our finalizer
// without a Job to count it.
func (c *Controller) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	deleted := false
	if !ok {
		tomb, isTomb := obj.(cache.DeletedFinalStateUnknown)
		if pod, ok = tomb.Obj.(*corev1.Pod); !isTomb || !ok {
			return
		}
		deleted = true
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil && !deleted {
		// An orphan: the Jobs it matches may adopt it; with none, its finalizer goes.
		matching := c.matchingJobs(pod)
		for _, job := range matching {
			c.queue.Add(job.Namespace + "/" + job.Name)
		}
		if len(matching) == 0 && hasTrackingFinalizer(pod) {
			c.orphans.Add(pod.Namespace + "/" + pod.Name)
		}
		return
	}
	if ref == nil || ref.Kind != jobKind.Kind || ref.APIVersion != jobKind.GroupVersion().String() {
		if hasTrackingFinalizer(pod) && !deleted {
			c.orphans.Add(pod.Namespace + "/" + pod.Name)
		}
		return
	}
	job, err := c.jobs.Jobs(pod.Namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		if hasTrackingFinalizer(pod) && !deleted {
			c.orphans.Add(pod.Namespace + "/" + pod.Name)
		}
		return
	}
	c.queue.Add(pod.Namespace + "/" + ref.Name)
}

// state is the memory of a Job, fresh when the Job was replaced by one of the same name.
func (c *Controller) state(key string, uid types.UID) *jobState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.states[key]
	if st == nil || st.uid != uid {
		st = &jobState{uid: uid, creating: map[string]pendingPod{}, deleting: map[string]time.Time{}, finalized: map[types.UID]struct{}{}}
		c.states[key] = st
	}
	return st
}

func (c *Controller) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.states, key)
}

// prune drops the writes the cache now shows, and those it never showed in time.
func (st *jobState) prune(pods []*corev1.Pod, now time.Time) {
	byName := map[string]*corev1.Pod{}
	byUID := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name], byUID[p.UID] = p, p
	}
	for name, p := range st.creating {
		if _, seen := byName[name]; seen || now.Sub(p.at) > expectationTimeout {
			delete(st.creating, name)
		}
	}
	for name, at := range st.deleting {
		if p, ok := byName[name]; !ok || p.DeletionTimestamp != nil || now.Sub(at) > expectationTimeout {
			delete(st.deleting, name)
		}
	}
	for uid := range st.finalized {
		if p, ok := byUID[uid]; !ok || !hasTrackingFinalizer(p) {
			delete(st.finalized, uid)
		}
	}
}

// releaseOrphan removes our finalizer from a pod whose Job is gone (checked against the
// API, not only the cache) or that no Job would adopt, so the pod can be deleted.
func (c *Controller) releaseOrphan(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !hasTrackingFinalizer(pod)) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil && len(c.matchingJobs(pod)) > 0 {
		return 0, nil // a Job adopts it, finalizer and all
	}
	if ref != nil && ref.Kind == jobKind.Kind {
		job, err := c.client.BatchV1().Jobs(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil && job.UID == ref.UID {
			c.queue.Add(ns + "/" + ref.Name)
			return 0, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return 0, err
		}
	}
	return 0, c.removeFinalizer(ctx, pod)
}
