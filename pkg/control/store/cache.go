package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/google/btree"
	"github.com/prometheus/client_golang/prometheus"
)

// CacheOptions tunes a Cache; the zero value gives the defaults.
type CacheOptions struct {
	// RingSize is how many recent events the cache keeps for watches resuming from the past,
	// and at least how many changes it can undo to list a past revision; a watch or an exact
	// list from before them is served by the engine (default 4096).
	RingSize int
	// WatchBuffer is how many events a watcher may fall behind before its channel is closed
	// (default 4096).
	WatchBuffer int
	// CatchUpTimeout bounds how long a List waits for the cache to reach the engine's
	// revision before it reads the engine instead (default 3s).
	CatchUpTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (o CacheOptions) withDefaults() CacheOptions {
	if o.RingSize <= 0 {
		o.RingSize = 4096
	}
	if o.WatchBuffer <= 0 {
		o.WatchBuffer = 4096
	}
	if o.CatchUpTimeout <= 0 {
		o.CatchUpTimeout = 3 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// errBeforeRing: a watch asked for events older than the cache's ring; the engine serves it.
var errBeforeRing = errors.New("revision is older than the watch cache")

// cacheRetryDelay is the pause between attempts to re-watch the engine after a failure.
const cacheRetryDelay = 500 * time.Millisecond

// Cache is an Interface over an engine that serves reads from memory. It holds the current
// value of every key and a ring of recent events, fed by a single engine watch, so LIST and
// GET read no storage and any number of watchers share that one engine watch. Reads are
// consistent: they see every write acknowledged before they began, because they are served
// only once the cache has reached the engine's current revision. Writes go to the engine.
//
// Values returned by a Cache are shared by all readers: never modify them. Every reader of
// one version of a key gets the same bytes, so readers may share what they derive from a
// version by the address of its bytes (the API server's encodings do).
type Cache struct {
	engine  Interface
	opts    CacheOptions
	metrics cacheMetrics

	mu    sync.RWMutex
	state *btree.BTreeG[KV] // current value of every key, by key
	rev   int64             // the revision state reflects
	// advanced is closed, and replaced, whenever rev moves.
	advanced chan struct{}
	// past holds, oldest first, every change after pastFrom with the version it replaced,
	// so that a list at a revision not older than pastFrom is state with them undone.
	past     []change
	pastFrom int64
	fanout   *broadcaster

	// written are this server's writes whose events the engine has not sent back yet, by
	// key: their events then carry the very bytes written (see sameBytes).
	writtenMu sync.Mutex
	written   map[string]KV

	stop context.CancelFunc
	done chan struct{} // closed when the feeding goroutine has returned
	once sync.Once
}

var _ Interface = (*Cache)(nil)

// change is one change the cache applied, with the key's version before it.
type change struct {
	rev     int64
	key     string
	prior   KV
	existed bool // false: the change created the key
}

// NewCache loads the engine's current state and follows its changes. On success the Cache
// owns the engine: Close closes it.
func NewCache(engine Interface, opts CacheOptions) (*Cache, error) {
	opts = opts.withDefaults()
	ctx, stop := context.WithCancel(context.Background())
	c := &Cache{engine: engine, opts: opts, advanced: make(chan struct{}), stop: stop, done: make(chan struct{})}
	c.metrics = newCacheMetrics(func() int { return c.broadcaster().count() })
	events, err := c.load(ctx)
	if err != nil {
		stop()
		return nil, err
	}
	go c.feed(ctx, events)
	return c, nil
}

// load (re)reads every key from the engine and starts the engine watch after that read.
// Watchers of a previous load are closed: they resume through the engine, which tells those
// it cannot serve that their revision is compacted.
func (c *Cache) load(ctx context.Context) (<-chan Event, error) {
	kvs, rev, err := c.engine.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("watch cache: load the store: %w", err)
	}
	events, err := c.engine.Watch(ctx, "", rev)
	if err != nil {
		return nil, fmt.Errorf("watch cache: watch the store from revision %d: %w", rev, err)
	}
	state := btree.NewG(32, func(a, b KV) bool { return a.Key < b.Key })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, kv := range kvs {
		if old, ok := c.stateGet(kv.Key); ok && old.Revision == kv.Revision {
			kv.Value = old.Value // same version: the same bytes, which readers know it by
		}
		state.ReplaceOrInsert(kv)
	}
	if c.fanout != nil {
		c.fanout.close()
	}
	c.fanout = newBroadcaster(rev, 0, c.opts.RingSize, c.opts.WatchBuffer, beforeRing, func(prefix string) {
		c.metrics.slowWatchers.Inc()
		c.opts.Logger.Info("watch cache: closing a watch that fell behind; its client re-watches", "prefix", prefix, "buffer", c.opts.WatchBuffer)
	})
	c.state, c.rev = state, rev
	c.past, c.pastFrom = nil, rev
	c.advance()
	return events, nil
}

func beforeRing(_ context.Context, _ string, after int64, _ int) ([]Event, int64, error) {
	return nil, after, errBeforeRing
}

// stateGet reads the state; callers hold c.mu. The state is nil before the first load.
func (c *Cache) stateGet(key string) (KV, bool) {
	if c.state == nil {
		return KV{}, false
	}
	return c.state.Get(KV{Key: key})
}

// advance wakes the reads waiting for the cache to catch up. Callers hold c.mu.
func (c *Cache) advance() {
	close(c.advanced)
	c.advanced = make(chan struct{})
}

func (c *Cache) broadcaster() *broadcaster {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.fanout
}

// feed applies the engine's events until the cache closes.
func (c *Cache) feed(ctx context.Context, events <-chan Event) {
	defer close(c.done)
	for events != nil {
		c.consume(ctx, events)
		events = c.rewatch(ctx)
	}
}

// rewatch resumes the engine watch at the cache's revision once the engine has ended it,
// reloading when the engine no longer has the changes since. It retries until the cache or
// the engine closes, and then returns nil.
func (c *Cache) rewatch(ctx context.Context) <-chan Event {
	for ctx.Err() == nil {
		c.mu.RLock()
		from := c.rev
		c.mu.RUnlock()
		events, err := c.engine.Watch(ctx, "", from)
		if errors.Is(err, ErrCompacted) {
			c.opts.Logger.Warn("watch cache: the store no longer has the changes after the cache's revision; reloading", "revision", from)
			c.metrics.reloads.Inc()
			events, err = c.load(ctx)
		}
		switch {
		case err == nil:
			return events
		case errors.Is(err, ErrClosed):
			return nil
		case ctx.Err() == nil:
			c.opts.Logger.Warn("watch cache: cannot follow the store; retrying", "revision", from, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(cacheRetryDelay):
			}
		}
	}
	return nil
}

// consume applies events, in batches of what has arrived, until the channel closes.
func (c *Cache) consume(ctx context.Context, events <-chan Event) {
	for {
		var batch []Event
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			batch = append(batch, ev)
		}
	more:
		for len(batch) < historyChunk {
			select {
			case ev, ok := <-events:
				if !ok {
					c.apply(batch)
					return
				}
				batch = append(batch, ev)
			default:
				break more
			}
		}
		c.apply(batch)
	}
}

// apply updates the state with events, then hands them to the watchers.
func (c *Cache) apply(batch []Event) {
	c.mu.Lock()
	for i := range batch {
		ev := &batch[i]
		c.sameBytes(ev)
		prior, existed := c.stateGet(ev.Key)
		c.past = append(c.past, change{rev: ev.Revision, key: ev.Key, prior: prior, existed: existed})
		if ev.Type == Deleted {
			c.state.Delete(KV{Key: ev.Key})
		} else {
			// Shared with the event: readers of this version get the same bytes.
			c.state.ReplaceOrInsert(KV{Key: ev.Key, Value: ev.Value, Revision: ev.Revision, Stale: ev.Stale})
		}
		c.rev = max(c.rev, ev.Revision)
	}
	if len(c.past) > 2*c.opts.RingSize { // trimmed by halves, so appends stay cheap
		c.forgetPast(c.past[len(c.past)-c.opts.RingSize-1].rev)
	}
	c.forgetWritten(c.rev)
	c.advance()
	fanout := c.fanout
	c.mu.Unlock()
	fanout.publish(batch)
}

// sameBytes makes an event carry the bytes readers already hold for the versions it names,
// where the engine sent equal copies (etcd's events, a deleted bolt value, an encrypted
// engine's decryption): the bytes this server is writing, and the state's current value as
// the value before the change (for a delete, the value itself). Readers that share what they
// derive from a version by the address of its bytes then derive it once. Equal bytes are
// the same version's: the substitution never changes what an event says. Callers hold c.mu.
func (c *Cache) sameBytes(ev *Event) {
	if ev.Type != Deleted {
		c.writtenMu.Lock()
		if w, ok := c.written[ev.Key]; ok && bytes.Equal(w.Value, ev.Value) {
			ev.Value = w.Value
			delete(c.written, ev.Key)
		}
		c.writtenMu.Unlock()
	}
	cur, ok := c.stateGet(ev.Key)
	if !ok {
		return
	}
	if ev.PrevValue != nil && bytes.Equal(cur.Value, ev.PrevValue) {
		ev.PrevValue = cur.Value
	}
	if ev.Type == Deleted && bytes.Equal(cur.Value, ev.Value) {
		ev.Value = cur.Value
	}
}

// remembered makes a write whose bytes the cache remembers until its event arrives (which
// may come before the engine answers the write): the event then carries those very bytes.
func (c *Cache) remembered(key string, value []byte, write func() (int64, error)) (int64, error) {
	c.writtenMu.Lock()
	if c.written == nil {
		c.written = map[string]KV{}
	}
	c.written[key] = KV{Key: key, Value: value}
	c.writtenMu.Unlock()
	rev, err := write()
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	// Unless its event came already, or another write of the key took the entry over: a
	// failed write is forgotten, a done one waits for its event (see forgetWritten).
	if w, ok := c.written[key]; ok && unsafe.SliceData(w.Value) == unsafe.SliceData(value) {
		if err != nil {
			delete(c.written, key)
		} else {
			w.Revision = rev
			c.written[key] = w
		}
	}
	return rev, err
}

// forgetWritten drops the writes of revisions the cache has passed without their bytes
// being used (their event came with other bytes or before the write was remembered).
func (c *Cache) forgetWritten(rev int64) {
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	for key, w := range c.written {
		if w.Revision != 0 && w.Revision <= rev {
			delete(c.written, key)
		}
	}
}

// forgetPast drops the changes at and below rev. Callers hold c.mu.
func (c *Cache) forgetPast(rev int64) {
	if rev <= c.pastFrom {
		return
	}
	n, _ := slices.BinarySearchFunc(c.past, rev, func(ch change, rev int64) int { return cmp.Compare(ch.rev, rev) })
	if n < len(c.past) && c.past[n].rev == rev {
		n++
	}
	c.past = slices.Clone(c.past[n:])
	c.pastFrom = rev
}

// caughtUp tells whether the cache has reached the engine's current revision, waiting up to
// CatchUpTimeout for it when wait is set. false means: read the engine.
func (c *Cache) caughtUp(ctx context.Context, wait bool) bool {
	return c.reached(ctx, c.engine.Revision(), wait)
}

// reached tells whether the cache has reached revision target, waiting up to CatchUpTimeout
// for it when wait is set.
func (c *Cache) reached(ctx context.Context, target int64, wait bool) bool {
	var timeout <-chan time.Time
	for {
		c.mu.RLock()
		rev, advanced := c.rev, c.advanced
		c.mu.RUnlock()
		if rev >= target {
			return true
		}
		if !wait {
			c.metrics.engineReads.Inc()
			return false
		}
		if timeout == nil {
			timer := time.NewTimer(c.opts.CatchUpTimeout)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-advanced:
		case <-timeout:
			c.opts.Logger.Debug("watch cache: still behind the store, reading the store", "cache", rev, "store", target)
			c.metrics.engineReads.Inc()
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Get serves the key from memory when the cache is up to date, else from the engine: a Get
// never waits, and the engine reads one key cheaply.
func (c *Cache) Get(ctx context.Context, key string) (KV, error) {
	if !c.caughtUp(ctx, false) {
		return c.engine.Get(ctx, key)
	}
	c.mu.RLock()
	kv, ok := c.state.Get(KV{Key: key})
	c.mu.RUnlock()
	if !ok {
		return KV{}, fmt.Errorf("get %q: %w", key, ErrNotFound)
	}
	return kv, nil
}

// List serves the keys with the prefix from memory, once the cache has reached the engine's
// revision; the revision returned is the cache's, at least the engine's when List began.
func (c *Cache) List(ctx context.Context, prefix string) ([]KV, int64, error) {
	if !c.caughtUp(ctx, true) {
		if err := ctx.Err(); err != nil {
			return nil, 0, fmt.Errorf("list %q: %w", prefix, err)
		}
		return c.engine.List(ctx, prefix)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.list(prefix), c.rev, nil
}

// list reads the state's keys with the prefix. Callers hold c.mu.
func (c *Cache) list(prefix string) []KV {
	var kvs []KV
	c.state.AscendGreaterOrEqual(KV{Key: prefix}, func(kv KV) bool {
		if !strings.HasPrefix(kv.Key, prefix) {
			return false
		}
		kvs = append(kvs, kv)
		return true
	})
	return kvs
}

// ListAt serves a revision the cache has reached from memory, an exact one by undoing the
// changes since, as kube-apiserver's watch cache serves its snapshots. For a revision it has
// not reached it waits up to CatchUpTimeout, as kube-apiserver's does before it answers "Too
// large resource version"; then, and for changes older than it keeps, it asks the engine.
func (c *Cache) ListAt(ctx context.Context, prefix string, rev int64, exact bool) ([]KV, int64, error) {
	if rev <= 0 || (!exact && rev <= c.engine.Revision()) {
		return c.List(ctx, prefix)
	}
	if c.reached(ctx, rev, true) {
		if kvs, at, ok := c.listAt(prefix, rev, exact); ok {
			return kvs, at, nil
		}
		c.metrics.engineReads.Inc()
	} else if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("list %q at revision %d: %w", prefix, rev, err)
	}
	return c.engine.ListAt(ctx, prefix, rev, exact)
}

// listAt is ListAt from memory, once the cache has reached rev; false: the changes to undo
// are older than the cache keeps.
func (c *Cache) listAt(prefix string, rev int64, exact bool) ([]KV, int64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !exact {
		return c.list(prefix), c.rev, true
	}
	if rev < c.pastFrom {
		return nil, 0, false
	}
	restored := map[string]*KV{}
	// Newest first: the oldest change after rev, undone last, tells the version at rev.
	for i := len(c.past) - 1; i >= 0 && c.past[i].rev > rev; i-- {
		ch := &c.past[i]
		switch {
		case !strings.HasPrefix(ch.key, prefix):
		case ch.existed:
			restored[ch.key] = &ch.prior // restore copies it before c.mu is released
		default:
			restored[ch.key] = nil
		}
	}
	return restore(c.list(prefix), restored), rev, true
}

func (c *Cache) Create(ctx context.Context, key string, value []byte) (int64, error) {
	return c.remembered(key, value, func() (int64, error) { return c.engine.Create(ctx, key, value) })
}

func (c *Cache) Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error) {
	return c.remembered(key, value, func() (int64, error) { return c.engine.Update(ctx, key, value, expectedRevision) })
}

func (c *Cache) Delete(ctx context.Context, key string, expectedRevision int64) (KV, int64, error) {
	return c.engine.Delete(ctx, key, expectedRevision)
}

// Watch serves watches from the cache's ring and live events; a watch from before the ring
// goes to the engine, which serves it from its history or fails with ErrCompacted.
func (c *Cache) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan Event, error) {
	if fromRevision == 0 {
		// "From now" is the engine's now: the cache may not have seen the newest writes yet.
		fromRevision = c.engine.Revision()
	}
	events, err := c.broadcaster().watch(ctx, prefix, fromRevision)
	if errors.Is(err, errBeforeRing) {
		c.metrics.engineWatches.Inc()
		return c.engine.Watch(ctx, prefix, fromRevision)
	}
	return events, err
}

// Revision is the engine's revision.
func (c *Cache) Revision() int64 { return c.engine.Revision() }

// Compact compacts the engine's history (when the engine can) and the cache's with it.
func (c *Cache) Compact(ctx context.Context, rev int64) error {
	engine, ok := c.engine.(interface {
		Compact(context.Context, int64) error
	})
	if !ok {
		return fmt.Errorf("compact to revision %d: store engine %T cannot compact", rev, c.engine)
	}
	if err := engine.Compact(ctx, rev); err != nil {
		return err
	}
	c.mu.Lock()
	c.forgetPast(rev) // exact lists before rev fail as the engine's do
	c.mu.Unlock()
	c.broadcaster().setCompacted(rev)
	return nil
}

// CompactHistory compacts the engine every interval to the revision it had one interval
// earlier, so watches can resume from at least that long ago and no further back, as
// kube-apiserver does for etcd, which otherwise keeps every revision until it runs out of
// space. It runs until ctx ends; failures are logged and retried at the next tick.
func (c *Cache) CompactHistory(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var previous int64 // the revision at the last tick
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if previous > 0 {
			if err := c.Compact(ctx, previous); err != nil && ctx.Err() == nil {
				c.opts.Logger.Warn("watch cache: compacting the store's history failed", "revision", previous, "err", err)
			}
		}
		previous = c.Revision()
	}
}

// Collectors returns the cache's prometheus metrics and the engine's, for the caller to register.
func (c *Cache) Collectors() []prometheus.Collector {
	out := c.metrics.collectors()
	if engine, ok := c.engine.(interface{ Collectors() []prometheus.Collector }); ok {
		out = append(out, engine.Collectors()...)
	}
	return out
}

// Close stops following the engine, ends every watch and closes the engine.
func (c *Cache) Close() error {
	var err error
	c.once.Do(func() {
		c.stop()
		<-c.done
		c.broadcaster().close()
		err = c.engine.Close()
	})
	return err
}

type cacheMetrics struct {
	engineReads   prometheus.Counter
	engineWatches prometheus.Counter
	slowWatchers  prometheus.Counter
	reloads       prometheus.Counter
	watchers      prometheus.GaugeFunc
}

func newCacheMetrics(watchers func() int) cacheMetrics {
	return cacheMetrics{
		engineReads: newCounter("minik8s_store_cache_engine_reads_total",
			"Reads the watch cache passed to the store engine because it had not caught up with it, or no longer kept the changes a list at a past revision undoes."),
		engineWatches: newCounter("minik8s_store_cache_engine_watches_total",
			"Watches from a revision older than the watch cache's ring, served by the store engine."),
		slowWatchers: newCounter("minik8s_store_cache_slow_watchers_closed_total",
			"Watch cache watches closed because they fell too far behind."),
		reloads: newCounter("minik8s_store_cache_reloads_total",
			"Times the watch cache reloaded the store because the changes it missed were compacted."),
		watchers: newGaugeFunc("minik8s_store_cache_watchers", "Open watches served by the watch cache.",
			func() float64 { return float64(watchers()) }),
	}
}

func (m cacheMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.engineReads, m.engineWatches, m.slowWatchers, m.reloads, m.watchers}
}
