// Package workloop is a controller's work queue, as every controller repeats it: making
// it, feeding it from informer events, and the loop that works it.
package workloop

import (
	"context"
	"log/slog"
	gosync "sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// SyncFunc handles one key. An error retries the key with the queue's rate-limited
// back-off; a positive again asks for another look after that long; otherwise the key is done.
type SyncFunc[T comparable] func(ctx context.Context, key T) (again time.Duration, err error)

// Run hands keys from q to sync, one at a time, until ctx ends (it then shuts q down).
func Run[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], log *slog.Logger, sync SyncFunc[T]) {
	defer context.AfterFunc(ctx, q.ShutDown)()
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		again, err := sync(ctx, key)
		switch {
		case err != nil:
			log.Info("sync failed, will retry", "key", key, "err", err)
			q.AddRateLimited(key)
		case again > 0:
			q.Forget(key)
			q.AddAfter(key, again)
		default:
			q.Forget(key)
		}
		q.Done(key)
	}
}

// RunWorkers waits for the informers' caches, then works q with n workers until ctx ends:
// every controller's Run.
func RunWorkers[T comparable](ctx context.Context, n int, q workqueue.TypedRateLimitingInterface[T], log *slog.Logger, sync SyncFunc[T], synced ...cache.InformerSynced) {
	RunWorkersFrom(ctx, n, q, log, func() {}, sync, synced...)
}

// RunWorkersFrom is RunWorkers for a controller that keeps state beside the caches (what
// it handed out): once the caches are full, load rebuilds it from them, before any key is
// synced.
func RunWorkersFrom[T comparable](ctx context.Context, n int, q workqueue.TypedRateLimitingInterface[T], log *slog.Logger, load func(), sync SyncFunc[T], synced ...cache.InformerSynced) {
	defer utilruntime.HandleCrash()
	defer q.ShutDown() // its goroutines end with it, also when ctx ended before the caches filled
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	load()
	var wg gosync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Run(ctx, q, log, sync)
		}()
	}
	wg.Wait()
}

// NewQueue is a controller's queue: client-go's default controller rate limiter (per-key
// exponential back-off and an overall bucket), named for the workqueue metrics.
func NewQueue[T comparable](name string) workqueue.TypedRateLimitingInterface[T] {
	return NewQueueWithClock[T](name, nil) // nil: the real clock
}

// NewQueueWithClock is NewQueue whose delays run on clk, so a test can move time on.
func NewQueueWithClock[T comparable](name string, clk clock.WithTicker) workqueue.TypedRateLimitingInterface[T] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[T](), workqueue.TypedRateLimitingQueueConfig[T]{Name: name, Clock: clk})
}

// NewBackoffQueue is a queue with only a per-key exponential back-off from base to max and
// no overall bucket, as the kube-controller-manager controllers that build their own
// (certificates: 200ms to 1000s; job: 1s to 1 min); clk nil is the real clock.
func NewBackoffQueue[T comparable](name string, base, max time.Duration, clk clock.WithTicker) workqueue.TypedRateLimitingInterface[T] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[T](base, max),
		workqueue.TypedRateLimitingQueueConfig[T]{Name: name, Clock: clk})
}

// Enqueue is an event handler's body that adds the object's namespace/name key to q (a
// deleted object's too, from its tombstone).
func Enqueue(q workqueue.TypedInterface[string]) func(obj any) {
	return func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			q.Add(key)
		}
	}
}

// EnqueueNamespace is an event handler's body for a controller whose objects count what
// else their namespace holds (disruption budgets, resource quotas): it adds to q the key of
// every object in the event object's namespace, listed through in (a lister's namespace
// accessor, such as lister.ResourceQuotas).
func EnqueueNamespace[L interface {
	List(selector labels.Selector) ([]T, error)
}, T any](q workqueue.TypedInterface[string], in func(namespace string) L) func(obj any) {
	enqueue := Enqueue(q)
	return func(obj any) {
		o, ok := Object[metav1.Object](obj)
		if !ok {
			return
		}
		list, _ := in(o.GetNamespace()).List(labels.Everything())
		for _, item := range list {
			enqueue(item)
		}
	}
}

// OnEvery calls on with every object added, updated (the new state) or deleted.
func OnEvery(on func(obj any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, obj any) { on(obj) }, DeleteFunc: on}
}

// OnAddOrUpdate calls on with every object added or updated (the new state), not deleted.
func OnAddOrUpdate(on func(obj any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, obj any) { on(obj) }}
}

// Object is an event's object as a T, unwrapped from a deletion tombstone.
func Object[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, ok := obj.(T)
	return t, ok
}

// Lookup is how a sync of a namespaced object starts: the object key names, read through
// in (a lister's namespace accessor, such as lister.Jobs). found is false with no error
// when there is nothing to sync: the key is malformed or the object is gone. Any other
// error is the lister's, for the sync to return and be retried.
func Lookup[L interface{ Get(name string) (T, error) }, T any](key string, in func(namespace string) L) (obj T, found bool, err error) {
	return LookupFunc(key, func(ns, name string) (T, error) { return in(ns).Get(name) })
}

// LookupFunc is Lookup reading through get(namespace, name).
func LookupFunc[T any](key string, get func(namespace, name string) (T, error)) (obj T, found bool, err error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return obj, false, nil // not a key this controller made: nothing to retry
	}
	return Found(get(ns, name))
}

// Found is how a sync of an object keyed by its name alone starts (cluster-scoped, or of
// one namespace), from its lister's Get(name); Lookup ends with it too. found is false with no error when the object is gone, nothing to sync;
// any other error is the lister's, for the sync to return and be retried.
func Found[T any](obj T, err error) (_ T, found bool, _ error) {
	if apierrors.IsNotFound(err) {
		return obj, false, nil
	}
	return obj, err == nil, err
}
