// Package replicaset keeps the number of pods a ReplicaSet or ReplicationController asks for:
// it adopts matching orphans, releases pods relabelled out of its selector, creates missing
// pods from the template in slow-start batches and deletes surplus ones least useful first,
// as kube-controller-manager's replicaset and replication controllers do. One controller
// serves both kinds: a ReplicationController is handled as the ReplicaSet it converts to.
package replicaset

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/minik8s/minik8s/internal/controller/podready"
	"github.com/minik8s/minik8s/internal/controller/templatepod"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

const (
	// burstReplicas caps the pods created or deleted in one sync, as kube-controller-manager's.
	burstReplicas = 500
	// workers is how many sets are synced at once (--concurrent-replicaset-syncs).
	workers = 5
)

// Controller runs one kind of replica set.
type Controller struct {
	client   kubernetes.Interface
	kind     *kind
	pods     corelisters.PodLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	exp      *expectations
	recorder record.EventRecorder
	clock    clock.Clock
	log      *slog.Logger
}

func newController(client kubernetes.Interface, k *kind, pods cache.SharedIndexInformer, podLister corelisters.PodLister, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	clk := clock.RealClock{}
	c := &Controller{
		client: client, kind: k, pods: podLister,
		synced:   []cache.InformerSynced{pods.HasSynced, k.informer.HasSynced},
		queue:    workloop.NewQueue[string](k.component),
		exp:      newExpectations(clk.Now),
		recorder: recorder, clock: clk, log: log,
	}
	onSet := workloop.OnAddOrUpdate(workloop.Enqueue(c.queue))
	onSet.DeleteFunc = func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.exp.forget(key)
			c.queue.Add(key)
		}
	}
	if _, err := k.informer.AddEventHandler(onSet); err != nil {
		return nil, err
	}
	_, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	})
	return c, err
}

// ownerKey is the key of the set of this kind controlling pod, if any.
func (c *Controller) ownerKey(pod *corev1.Pod) (string, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != c.kind.gvk.Kind || ref.APIVersion != c.kind.gvk.GroupVersion().String() {
		return "", false
	}
	set, err := c.kind.get(pod.Namespace, ref.Name)
	if err != nil || set.UID != ref.UID {
		return "", false
	}
	return pod.Namespace + "/" + ref.Name, true
}

// enqueueMatching queues every set of the pod's namespace whose selector matches it: an
// orphan may be adopted.
func (c *Controller) enqueueMatching(pod *corev1.Pod) {
	sets, err := c.kind.list(pod.Namespace)
	if err != nil {
		return
	}
	for _, set := range sets {
		if sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			c.queue.Add(pod.Namespace + "/" + set.Name)
		}
	}
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		return
	}
	if key, ok := c.ownerKey(pod); ok {
		c.exp.observe(key, 1, 0)
		c.queue.Add(key)
		return
	}
	if metav1.GetControllerOf(pod) == nil {
		c.enqueueMatching(pod)
	}
}

func (c *Controller) updatePod(oldObj, newObj any) {
	old, cur := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
	if cur.ResourceVersion == old.ResourceVersion {
		return // a periodic resync
	}
	if cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
		// A graceful deletion starts: count it as the deletion we expected now, so a
		// replacement is created without waiting out the grace period.
		c.deletePod(cur)
		return
	}
	oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		if key, ok := c.ownerKey(old); ok {
			c.queue.Add(key)
		}
	}
	if key, ok := c.ownerKey(cur); ok {
		c.queue.Add(key)
		if set, err := c.kind.get(cur.Namespace, curRef.Name); err == nil && set.Spec.MinReadySeconds > 0 && !podready.Ready(old) && podready.Ready(cur) {
			// It becomes available minReadySeconds from now: look again then.
			c.queue.AddAfter(key, time.Duration(set.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if curRef == nil && (!labels.Equals(old.Labels, cur.Labels) || oldRef != nil) {
		c.enqueueMatching(cur)
	}
}

func (c *Controller) deletePod(obj any) {
	pod, ok := workloop.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	if key, ok := c.ownerKey(pod); ok {
		c.exp.observe(key, 0, 1)
		c.queue.Add(key)
	}
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, workers, c.queue, c.log, c.sync, c.synced...)
}

// sync brings one set to its replica count and writes its status.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	set, found, err := workloop.LookupFunc(key, c.kind.get)
	if err != nil {
		return 0, err
	}
	if !found {
		c.exp.forget(key)
		return 0, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || selector.Empty() {
		c.log.Info("set has an invalid or empty selector, left alone", "key", key, "err", err)
		return 0, nil
	}
	all, err := c.pods.Pods(set.Namespace).List(labels.Everything())
	if err != nil {
		return 0, err
	}
	owned, err := c.claimPods(ctx, set, selector, activePods(all))
	if err != nil {
		return 0, err
	}
	var manageErr error
	if c.exp.satisfied(key) && set.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, key, set, owned)
	}
	status := c.calculateStatus(set, owned, manageErr)
	if c.kind.terminating {
		status.TerminatingReplicas = ptr.To(terminatingPods(set, selector, all))
	}
	if !equality.Semantic.DeepEqual(status, set.Status) {
		if err := c.kind.updateStatus(ctx, set, status); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("update status of %s: %w", key, err)
		}
	}
	if manageErr != nil {
		return 0, manageErr
	}
	if set.Spec.MinReadySeconds > 0 && status.ReadyReplicas != status.AvailableReplicas {
		return time.Duration(set.Spec.MinReadySeconds) * time.Second, nil
	}
	return 0, nil
}

// activePods are the pods that count towards a set: neither finished nor being deleted.
func activePods(pods []*corev1.Pod) []*corev1.Pod {
	var active []*corev1.Pod
	for _, p := range pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil {
			active = append(active, p)
		}
	}
	return active
}

// terminatingPods counts set's pods being deleted that have not ended yet (kube's
// FilterTerminatingPods and FilterClaimedPods): they still run, beside their replacements.
func terminatingPods(set *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) int32 {
	n := int32(0)
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed &&
			metav1.IsControlledBy(p, set) && selector.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}

// manageReplicas creates or deletes pods to reach the wanted count.
func (c *Controller) manageReplicas(ctx context.Context, key string, set *appsv1.ReplicaSet, owned []*corev1.Pod) error {
	want := int(ptr.Deref(set.Spec.Replicas, 1))
	diff := len(owned) - want
	switch {
	case diff < 0:
		n := min(-diff, burstReplicas)
		c.exp.expect(key, n, 0)
		created, err := slowStart(n, func() error { return c.createPod(ctx, set) })
		if skipped := n - created; skipped > 0 {
			c.exp.observe(key, skipped, 0) // never asked, or refused: no event will come
		}
		return err
	case diff > 0:
		related, err := c.relatedPods(set)
		if err != nil {
			return err
		}
		victims := podsToDelete(owned, related, min(diff, burstReplicas), c.clock.Now())
		c.exp.expect(key, 0, len(victims))
		errs := make(chan error, len(victims))
		var wg sync.WaitGroup
		for _, pod := range victims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- c.deletePodOf(ctx, key, set, pod)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// relatedPods are the pods of every set that set's own controller also controls (the
// ReplicaSets of one Deployment), as kube's getIndirectlyRelatedPods: scaling down takes
// first a pod that shares its node with more of them. A set without a controller has none.
func (c *Controller) relatedPods(set *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	owner := metav1.GetControllerOf(set)
	if owner == nil {
		return nil, nil
	}
	sets, err := c.kind.list(set.Namespace)
	if err != nil {
		return nil, err
	}
	var related []*corev1.Pod
	seen := map[types.UID]bool{}
	for _, s := range sets {
		if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != owner.UID {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
		if err != nil {
			continue // an invalid selector matches no pods
		}
		pods, err := c.pods.Pods(s.Namespace).List(selector)
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			if !seen[p.UID] {
				seen[p.UID] = true
				related = append(related, p)
			}
		}
	}
	return related, nil
}

// slowStart calls create n times in batches of 1, 2, 4, ... concurrent calls and stops at
// the first batch with a failure, so a template the API refuses fails once, not n times.
// It returns how many calls succeeded and the first error.
func slowStart(n int, create func() error) (int, error) {
	done := 0
	for batch := 1; done < n; batch *= 2 {
		batch = min(batch, n-done)
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- create()
			}()
		}
		wg.Wait()
		close(errs)
		var first error
		for err := range errs {
			if err == nil {
				done++
			} else if first == nil {
				first = err
			}
		}
		if first != nil {
			return done, first
		}
	}
	return done, nil
}

func (c *Controller) createPod(ctx context.Context, set *appsv1.ReplicaSet) error {
	pod := templatepod.New(&set.Spec.Template, set, c.kind.gvk)
	created, err := c.client.CoreV1().Pods(set.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			c.recorder.Eventf(c.kind.object(set), corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		}
		return err
	}
	c.recorder.Eventf(c.kind.object(set), corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return nil
}

func (c *Controller) deletePodOf(ctx context.Context, key string, set *appsv1.ReplicaSet, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		c.exp.observe(key, 0, 1) // already gone (or replaced): no deletion event will come for it
		return nil
	case err != nil:
		c.exp.observe(key, 0, 1)
		c.recorder.Eventf(c.kind.object(set), corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		return err
	}
	c.recorder.Eventf(c.kind.object(set), corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", pod.Name)
	return nil
}
