package workloop

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

func TestRunRetriesErrorsAndRequeues(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan struct{})
	go func() {
		Run(ctx, q, slog.New(slog.DiscardHandler), func(_ context.Context, key string) (time.Duration, error) {
			mu.Lock()
			defer mu.Unlock()
			calls[key]++
			switch {
			case key == "flaky" && calls[key] < 3:
				return 0, errors.New("not yet")
			case key == "again" && calls[key] < 2:
				return time.Millisecond, nil
			}
			return 0, nil
		})
		close(done)
	}()
	q.Add("flaky")
	q.Add("again")
	q.Add("once")
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		ok := calls["flaky"] == 3 && calls["again"] == 2 && calls["once"] == 1
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls = %v, want flaky 3 (two errors), again 2 (one requeue), once 1", calls)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop when its context ended")
	}
}

// TestRunWorkersWaitsForCachesThenWorksInParallel: nothing is handled before the caches
// sync; then n workers handle keys at the same time; it returns when ctx ends.
func TestRunWorkersWaitsForCachesThenWorksInParallel(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[int]())
	for i := range 4 {
		q.Add(i)
	}
	var synced atomic.Bool
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	handled := make(chan int, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		RunWorkers(ctx, 2, q, slog.New(slog.NewTextHandler(io.Discard, nil)), func(_ context.Context, k int) (time.Duration, error) {
			if !synced.Load() {
				t.Errorf("key %d handled before the caches synced", k)
			}
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			<-release
			inFlight.Add(-1)
			handled <- k
			return 0, nil
		}, func() bool { return synced.Load() })
		close(done)
	}()
	time.Sleep(200 * time.Millisecond)
	synced.Store(true)
	time.Sleep(300 * time.Millisecond)
	close(release)
	for range 4 {
		<-handled
	}
	if most.Load() != 2 {
		t.Errorf("%d keys handled at once, want 2 workers", most.Load())
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("RunWorkers did not return when its context ended")
	}
}

// TestFeedingTheQueue: the handlers put namespace/name keys in the named queue for the
// events they are for, a deleted object's from its tombstone too.
func TestFeedingTheQueue(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	q := NewQueue[string]("test")
	defer q.ShutDown()
	every, upserts := OnEvery(Enqueue(q)), OnAddOrUpdate(Enqueue(q))
	every.OnAdd(pod("added"), false)
	every.OnUpdate(pod("old"), pod("updated"))
	every.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: pod("gone")})
	upserts.OnAdd(pod("added-2"), false)
	upserts.OnUpdate(pod("old-2"), pod("updated-2"))
	upserts.OnDelete(pod("deleted-2"))
	var got []string
	for q.Len() > 0 {
		k, _ := q.Get()
		got = append(got, k)
		q.Done(k)
	}
	want := []string{"ns/added", "ns/updated", "ns/gone", "ns/added-2", "ns/updated-2"}
	if !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	if p, ok := Object[*corev1.Pod](cache.DeletedFinalStateUnknown{Obj: pod("p")}); !ok || p.Name != "p" {
		t.Errorf("Object of a tombstone = %v, %v", p, ok)
	}
	if _, ok := Object[*corev1.Node](pod("p")); ok {
		t.Error("a pod taken for a node")
	}
}

func TestLookup(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "here"}}); err != nil {
		t.Fatal(err)
	}
	get := func(ns, name string) (*corev1.Pod, error) {
		if name == "broken" {
			return nil, errors.New("cache broken")
		}
		obj, ok, err := indexer.GetByKey(ns + "/" + name)
		if err != nil || !ok {
			return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
		}
		return obj.(*corev1.Pod), nil
	}
	for key, want := range map[string]struct {
		found, err bool
	}{"ns/here": {found: true}, "ns/gone": {}, "a/b/c": {}, "ns/broken": {err: true}} {
		pod, found, err := LookupFunc(key, get)
		if found != want.found || (err != nil) != want.err || (found && pod.Name != "here") {
			t.Errorf("LookupFunc(%q) = %v, %v, %v; want found %v, error %v", key, pod, found, err, want.found, want.err)
		}
	}
}

// TestFound: a cluster-scoped object's Get read as a sync's start: gone is nothing to do,
// any other error is returned for a retry.
func TestFound(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "here"}}); err != nil {
		t.Fatal(err)
	}
	nodes := corelisters.NewNodeLister(indexer)
	if node, found, err := Found(nodes.Get("here")); !found || err != nil || node.Name != "here" {
		t.Errorf("Found(here) = %v, %v, %v; want the node", node, found, err)
	}
	if _, found, err := Found(nodes.Get("gone")); found || err != nil {
		t.Errorf("Found(gone) = %v, %v; want not found, no error", found, err)
	}
	if _, found, err := Found[*corev1.Node](nil, errors.New("cache broken")); found || err == nil {
		t.Errorf("Found(broken) = %v, %v; want not found and the error", found, err)
	}
}

func TestEnqueueNamespace(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, key := range []string{"a/q1", "a/q2", "b/q3"} {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		if err := indexer.Add(&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	q := NewQueue[string]("test")
	defer q.ShutDown()
	changed := EnqueueNamespace(q, corelisters.NewResourceQuotaLister(indexer).ResourceQuotas)
	changed(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"}})
	changed(cache.DeletedFinalStateUnknown{Key: "c/p", Obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "p"}}})
	changed("not an object")
	var got []string
	for q.Len() > 0 {
		k, _ := q.Get()
		got = append(got, k)
		q.Done(k)
	}
	slices.Sort(got)
	if want := []string{"a/q1", "a/q2"}; !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
}
