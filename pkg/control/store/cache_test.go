package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func openCache(t *testing.T, engine Interface, opts CacheOptions) *Cache {
	t.Helper()
	c, err := NewCache(engine, opts)
	return closedAtEnd(t, c, err)
}

func cachedBolt(boltOpts BoltOptions, cacheOpts CacheOptions) func(t *testing.T) openFunc {
	return func(t *testing.T) openFunc {
		path := filepath.Join(t.TempDir(), "state.db")
		return func(t *testing.T) Interface { return openCache(t, openBolt(t, path, boltOpts), cacheOpts) }
	}
}

func TestCacheConformance(t *testing.T) {
	t.Run("Bolt", func(t *testing.T) { runConformance(t, cachedBolt(BoltOptions{}, CacheOptions{})) })
	// A ring of 4 events sends resuming watches to the engine.
	t.Run("BoltSmallRing", func(t *testing.T) { runConformance(t, cachedBolt(BoltOptions{}, CacheOptions{RingSize: 4})) })
	t.Run("Etcd", func(t *testing.T) {
		endpoints := etcdtest.ForTest(t).Endpoints
		cases := 0
		runConformance(t, func(t *testing.T) openFunc {
			cases++
			prefix := fmt.Sprintf("/cache-conformance-%d/", cases)
			return func(t *testing.T) Interface {
				engine, err := OpenEtcd(endpoints, prefix, nil)
				return openCache(t, closedAtEnd(t, engine, err), CacheOptions{})
			}
		})
	})
}

// Reads of one version get the same bytes, which its watch event shares with the state, so
// the API server can share what it derives from a version by the address of its bytes.
func TestCacheSharesEachVersionsBytes(t *testing.T) {
	c := openCache(t, openBolt(t, filepath.Join(t.TempDir(), "state.db"), BoltOptions{}), CacheOptions{})
	ctx := t.Context()
	r1 := mustCreate(t, c, "/registry/m/a", "a1")
	kvs, _, err := c.List(ctx, "/registry/m/") // waits until the cache has the create
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Get(ctx, "/registry/m/a")
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.SliceData(first.Value) != unsafe.SliceData(kvs[0].Value) {
		t.Fatal("two reads of one version got different bytes, want the same")
	}
	ch := mustWatch(t, c, "/registry/m/", r1)
	mustUpdate(t, c, "/registry/m/a", "a2", r1)
	ev := receive(t, ch, 1)[0]
	second, err := c.Get(ctx, "/registry/m/a")
	if err != nil {
		t.Fatal(err)
	}
	if string(second.Value) != "a2" || unsafe.SliceData(ev.Value) != unsafe.SliceData(second.Value) {
		t.Fatalf("after an update: state %q, event %q, want the same bytes", second.Value, ev.Value)
	}
}

// Events carry the bytes readers already hold, even from an engine that sends copies (etcd):
// a write's own bytes, and the state's current value as the value before a change and as a
// deleted value.
func TestCacheEventsCarryTheBytesReadersHold(t *testing.T) {
	engine, err := OpenEtcd(etcdtest.ForTest(t).Endpoints, "/same-bytes/", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := openCache(t, engine, CacheOptions{})
	ctx := t.Context()
	same := func(what string, a, b []byte) {
		t.Helper()
		if string(a) != string(b) || unsafe.SliceData(a) != unsafe.SliceData(b) {
			t.Fatalf("%s: %q and %q are not the same bytes", what, a, b)
		}
	}
	ch := mustWatch(t, c, "/registry/s/", 0)
	v1 := []byte("value one")
	r1, err := c.Create(ctx, "/registry/s/a", v1)
	if err != nil {
		t.Fatal(err)
	}
	same("the create's event and the bytes written", receive(t, ch, 1)[0].Value, v1)
	v2 := []byte("value two")
	if _, err := c.Update(ctx, "/registry/s/a", v2, r1); err != nil {
		t.Fatal(err)
	}
	ev := receive(t, ch, 1)[0]
	same("the update's event and the bytes written", ev.Value, v2)
	same("the update's previous value and the state's before it", ev.PrevValue, v1)
	cur, err := c.Get(ctx, "/registry/s/a")
	if err != nil {
		t.Fatal(err)
	}
	same("the state and the bytes written", cur.Value, v2)
	if _, _, err := c.Delete(ctx, "/registry/s/a", 0); err != nil {
		t.Fatal(err)
	}
	ev = receive(t, ch, 1)[0]
	same("the delete's value and the state's before it", ev.Value, v2)
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	if len(c.written) != 0 {
		t.Fatalf("writes still remembered after their events: %v", c.written)
	}
}

// Many watchers share the one engine watch of the cache.
func TestCacheFanOutUsesOneEngineWatch(t *testing.T) {
	engine := openBolt(t, filepath.Join(t.TempDir(), "state.db"), BoltOptions{})
	c := openCache(t, engine, CacheOptions{})
	const watchers, writes = 200, 20
	var chans []<-chan Event
	for range watchers {
		chans = append(chans, mustWatch(t, c, "/registry/f/", 0))
	}
	if n := engine.watch.count(); n != 1 {
		t.Fatalf("%d watchers of the cache opened %d engine watches, want 1", watchers, n)
	}
	var revs []int64
	for i := range writes {
		revs = append(revs, mustCreate(t, c, fmt.Sprintf("/registry/f/%02d", i), "v"))
	}
	for i, ch := range chans {
		got := receive(t, ch, writes)
		for j, ev := range got {
			if ev.Revision != revs[j] {
				t.Fatalf("watcher %d: event %d at revision %d, want %d", i, j, ev.Revision, revs[j])
			}
		}
	}
}

// A watch from before the cache's ring is served by the engine.
func TestCacheOldWatchGoesToEngine(t *testing.T) {
	c := openCache(t, openBolt(t, filepath.Join(t.TempDir(), "state.db"), BoltOptions{}), CacheOptions{RingSize: 2})
	var revs []int64
	for i := range 5 {
		revs = append(revs, mustCreate(t, c, fmt.Sprintf("/registry/o/%d", i), "v"))
	}
	// A LIST waits until the cache has applied every write, so its ring has moved past revs[1].
	if _, _, err := c.List(context.Background(), "/registry/o/"); err != nil {
		t.Fatal(err)
	}
	got := receive(t, mustWatch(t, c, "/registry/o/", revs[0]), 4)
	if got[0].Revision != revs[1] || got[3].Revision != revs[4] {
		t.Fatalf("old watch got revisions %d..%d, want %d..%d", got[0].Revision, got[3].Revision, revs[1], revs[4])
	}
	if n := testutil.ToFloat64(c.metrics.engineWatches); n != 1 {
		t.Fatalf("engine watches = %v, want 1", n)
	}
}

// aheadEngine claims a revision its watchers have not been given, as an engine whose
// watch lags would.
type aheadEngine struct{ Interface }

func (e aheadEngine) Revision() int64 { return e.Interface.Revision() + 1 }

// A cache that cannot catch up reads the engine, after CatchUpTimeout for List and at once
// for Get, so reads stay consistent.
func TestCacheBehindReadsEngine(t *testing.T) {
	engine := openBolt(t, filepath.Join(t.TempDir(), "state.db"), BoltOptions{})
	mustCreate(t, engine, "/registry/b/x", "v")
	c := openCache(t, aheadEngine{engine}, CacheOptions{CatchUpTimeout: 100 * time.Millisecond})
	start := time.Now()
	kvs, _, err := c.List(t.Context(), "/registry/b/")
	if err != nil || len(kvs) != 1 {
		t.Fatalf("list from a cache behind the store: %v %v (want one engine KV)", kvs, err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("list read the engine after %s, before the catch-up timeout", waited)
	}
	if kv, err := c.Get(t.Context(), "/registry/b/x"); err != nil || string(kv.Value) != "v" {
		t.Fatalf("get from a cache behind the store: %+v %v", kv, err)
	}
	if n := testutil.ToFloat64(c.metrics.engineReads); n != 2 {
		t.Fatalf("engine reads = %v, want 2", n)
	}
}

// A cache that missed changes the engine no longer has reloads the state; its watchers are
// closed, and resuming from their old revision reports the compaction.
func TestCacheReloadsAfterCompaction(t *testing.T) {
	engine := openBolt(t, filepath.Join(t.TempDir(), "state.db"), BoltOptions{HistoryLimit: 10, RingSize: 4, WatchBuffer: 8})
	c := openCache(t, engine, CacheOptions{})
	ctx := t.Context()
	r0 := mustCreate(t, c, "/registry/r/gone", "v")
	watcher := mustWatch(t, c, "/registry/r/", r0)

	// Hold the feeding goroutine while the engine drops the cache's watch as too slow and
	// trims its history past the cache's revision.
	c.mu.Lock()
	if _, _, err := engine.Delete(ctx, "/registry/r/gone", 0); err != nil {
		c.mu.Unlock()
		t.Fatal(err)
	}
	var want []string
	afterDrop := 0 // writes since the engine dropped the cache's watch
	for i := 0; afterDrop <= 10; i++ {
		key := fmt.Sprintf("/registry/r/%05d", i)
		if _, err := engine.Create(ctx, key, []byte("v")); err != nil || i == 10000 {
			c.mu.Unlock()
			t.Fatalf("%d writes without the engine dropping the cache's watch: %v", i, err)
		}
		want = append(want, key)
		if testutil.ToFloat64(engine.metrics.slowWatchers) > 0 {
			afterDrop++
		}
	}
	c.mu.Unlock()

	deadline := time.Now().Add(eventTimeout)
	for testutil.ToFloat64(c.metrics.reloads) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the cache did not reload after its history was compacted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	kvs, rev, err := c.List(ctx, "/registry/r/")
	if err != nil || !slices.Equal(keysOf(kvs), want) || rev != engine.Revision() {
		t.Fatalf("after reload: %d keys at %d (store at %d), %v", len(kvs), rev, engine.Revision(), err)
	}
	var last int64
	for ev := range watcher { // closed by the reload
		last = ev.Revision
	}
	if _, err := c.Watch(ctx, "/registry/r/", max(last, r0)); !errors.Is(err, ErrCompacted) {
		t.Fatalf("resuming a watch closed by the reload at %d: got %v, want ErrCompacted", max(last, r0), err)
	}
}

func TestCacheCloseEndsWatchesAndEngine(t *testing.T) {
	engine := openBolt(t, filepath.Join(t.TempDir(), "state.db"), BoltOptions{})
	c, err := NewCache(engine, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ch := mustWatch(t, c, "/registry/c/", 0)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("event after close")
		}
	case <-time.After(eventTimeout):
		t.Fatal("watch still open after the cache closed")
	}
	if _, err := engine.Create(context.Background(), "/registry/c/x", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("engine after the cache closed: %v, want ErrClosed", err)
	}
	if _, err := c.Watch(context.Background(), "/registry/c/", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("watch after close: %v, want ErrClosed", err)
	}
}

// CompactHistory keeps about one interval of history.
func TestCacheCompactHistory(t *testing.T) {
	engine, err := OpenEtcd(etcdtest.ForTest(t).Endpoints, "/compact-history/", nil)
	c := openCache(t, closedAtEnd(t, engine, err), CacheOptions{RingSize: 1})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const interval = 300 * time.Millisecond
	go c.CompactHistory(ctx, interval)
	old := mustCreate(t, c, "/registry/h/old", "v")
	mustCreate(t, c, "/registry/h/new", "v") // pushes old out of the cache's ring of 1
	deadline := time.Now().Add(eventTimeout)
	for {
		ch, err := c.Watch(ctx, "/registry/h/", old-1)
		if errors.Is(err, ErrCompacted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("history at revision %d still there %s after it was written", old, eventTimeout)
		}
		// Not compacted yet. Compaction may still land during the replay; the watch is then
		// closed early, which is what a client re-watching must see, so just look again.
		drain(ch, 2, eventTimeout)
		time.Sleep(interval / 2)
	}
	if kvs, _, err := c.List(ctx, "/registry/h/"); err != nil || len(kvs) != 2 {
		t.Fatalf("objects after compaction: %v %v", keysOf(kvs), err)
	}
}

// drain reads up to n events or until ch closes or timeout passes.
func drain(ch <-chan Event, n int, timeout time.Duration) {
	deadline := time.After(timeout)
	for i := 0; i < n; i++ {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			return
		}
	}
}

// An exact list within the changes the cache keeps is served from memory; one before them
// goes to the engine, which still has it in its log.
func TestCacheListsThePastFromMemory(t *testing.T) {
	engine := openBolt(t, filepath.Join(t.TempDir(), "state.db"), BoltOptions{})
	c := openCache(t, engine, CacheOptions{RingSize: 2})
	a := mustCreate(t, c, "/registry/p/a", "a1")
	b := mustCreate(t, c, "/registry/p/b", "b1")
	mustUpdate(t, c, "/registry/p/a", "a2", a)
	kvs, _, err := c.ListAt(t.Context(), "/registry/p/", b, true)
	if err != nil || len(kvs) != 2 || string(kvs[0].Value) != "a1" || kvs[0].Revision != a {
		t.Fatalf("exact list at %d: %v %v", b, kvs, err)
	}
	if n := testutil.ToFloat64(c.metrics.engineReads); n != 0 {
		t.Fatalf("exact list within the kept changes read the engine %v times", n)
	}
	for i := range 4 { // the cache now keeps 2 to 4 changes: not those after a
		mustCreate(t, c, fmt.Sprintf("/registry/p/k%d", i), "v")
	}
	if _, _, err := c.List(t.Context(), "/registry/p/"); err != nil { // the cache has applied them
		t.Fatal(err)
	}
	kvs, _, err = c.ListAt(t.Context(), "/registry/p/", a, true)
	if err != nil || len(kvs) != 1 || string(kvs[0].Value) != "a1" {
		t.Fatalf("exact list at %d: %v %v", a, kvs, err)
	}
	if n := testutil.ToFloat64(c.metrics.engineReads); n != 1 {
		t.Fatalf("exact list before the kept changes read the engine %v times, want 1", n)
	}
}
