package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// BoltOptions tunes the bolt engine; the zero value gives the defaults.
type BoltOptions struct {
	// HistoryLimit is how many events the on-disk log keeps for resuming watches (default 10000).
	HistoryLimit int
	// RingSize is how many recent events are kept in memory so resuming watches need no
	// disk read (default 4096).
	RingSize int
	// WatchBuffer is how many events a watcher may fall behind before its channel is
	// closed (default 4096).
	WatchBuffer int
	// MaxBatch bounds how many writes share one commit (default 512).
	MaxBatch int
	// LockTimeout bounds the wait for the file lock another process holds (default 2s).
	LockTimeout time.Duration
	// NoSync skips fsync, so acknowledged writes can be lost in a crash. Tests only.
	NoSync bool
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (o BoltOptions) withDefaults() BoltOptions {
	setDefault := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	setDefault(&o.HistoryLimit, 10000)
	setDefault(&o.RingSize, 4096)
	setDefault(&o.WatchBuffer, 4096)
	setDefault(&o.MaxBatch, 512)
	if o.LockTimeout <= 0 {
		o.LockTimeout = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Bolt is the embedded engine: one bbolt file holding the objects, the store revision and a
// bounded log of recent events. Writes go through one committer goroutine that packs
// concurrent requests into one transaction (one fsync), so throughput grows with concurrency.
type Bolt struct {
	path    string
	opts    BoltOptions
	db      *bolt.DB
	rev     atomic.Int64
	watch   *broadcaster
	metrics *metrics

	writes    chan *writeRequest
	closing   chan struct{} // closed by Close: the committer stops taking writes
	stopped   chan struct{} // closed by the committer when it has answered everything it took
	closeOnce sync.Once
	closeErr  error
}

var _ Interface = (*Bolt)(nil)

// OpenBolt opens (creating when missing) the store file at path.
func OpenBolt(path string, opts BoltOptions) (*Bolt, error) {
	opts = opts.withDefaults()
	if err := checkFile(path, opts.LockTimeout); err != nil {
		return nil, describeOpenError(path, opts.LockTimeout, err)
	}
	db, err := openFile(path, &bolt.Options{
		Timeout: opts.LockTimeout,
		NoSync:  opts.NoSync,
		// As etcd does: a hashmap freelist, rebuilt on open instead of written on every commit.
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true,
	})
	if err != nil {
		return nil, describeOpenError(path, opts.LockTimeout, err)
	}
	var rev, compacted int64
	err = db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil && tx.Bucket(bucketObjects) == nil && hasBuckets(tx) {
			return errors.New("it is a bbolt file of another program (no minik8s buckets), refusing to write into it")
		}
		for _, name := range [][]byte{bucketObjects, bucketEvents, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("bucket %s: %w", name, err)
			}
		}
		var err error
		meta := tx.Bucket(bucketMeta)
		if rev, err = readMeta(meta, metaRevision); err != nil {
			return err
		}
		compacted, err = readMeta(meta, metaCompacted)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store %s: read its state: %w", path, err)
	}
	s := &Bolt{
		path:    path,
		opts:    opts,
		db:      db,
		writes:  make(chan *writeRequest),
		closing: make(chan struct{}),
		stopped: make(chan struct{}),
	}
	s.rev.Store(rev)
	s.metrics = newMetrics(s.Revision, func() int { return s.watch.count() })
	s.watch = newBroadcaster(rev, compacted, opts.RingSize, opts.WatchBuffer, s.history, func(prefix string) {
		s.metrics.slowWatchers.Inc()
		opts.Logger.Info("store: closing a watch that fell behind; its client re-watches", "prefix", prefix, "buffer", opts.WatchBuffer)
	})
	go s.commitLoop()
	opts.Logger.Debug("store opened", "path", path, "revision", rev, "compacted", compacted)
	return s, nil
}

// errCorrupt marks a store file whose pages do not hold together.
var errCorrupt = errors.New("corrupt")

// checkFile reads every page of an existing store before it is opened for writing: bbolt
// trusts its file, and opening one that was cut short or has a damaged page crashes the
// process in its page scan (bbolt's tx.Check too: it rebuilds the freelist with that scan,
// in a goroutine of its own). The walk here runs in this goroutine, under guard.
func checkFile(path string, timeout time.Duration) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 {
		return nil // a new store (or an error the open reports)
	}
	db, err := openFile(path, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return err
	}
	defer db.Close()
	return guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			// Reading a page past the end of the file would fault: first the size.
			if tx.Size() > fi.Size() {
				return fmt.Errorf("%w: it is %d bytes long but its pages reach %d bytes (was it cut short?)", errCorrupt, fi.Size(), tx.Size())
			}
			return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walkBucket(b) })
		})
	})
}

// walkBucket visits every branch and leaf page of b and its nested buckets; bbolt checks
// each page it reads (its id and type) and panics on a bad one.
func walkBucket(b *bolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			return walkBucket(b.Bucket(k))
		}
		return nil
	})
}

// openFile opens a bbolt file, turning a panic of bbolt's on a bad page into an error.
func openFile(path string, o *bolt.Options) (db *bolt.DB, err error) {
	err = guard(func() error {
		db, err = bolt.Open(path, 0o600, o)
		return err
	})
	return db, err
}

// guard runs fn, making a panic in it (or a fault reading the mapped file) an errCorrupt
// error.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: bbolt failed reading it: %v", errCorrupt, v)
		}
	}()
	return fn()
}

// recovery is what to do about a store that cannot be opened.
const recovery = "miniapi will not start on it: restore it from a backup (a copy of the file taken while miniapi was stopped)"

func describeOpenError(path string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, errCorrupt):
		return fmt.Errorf("store %s is %w; %s", path, err, recovery)
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("store %s is locked by another process (is another miniapi using this data dir?): no lock after %s", path, timeout)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return fmt.Errorf("store %s is corrupt or not a bbolt database: %w; %s", path, err, recovery)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("store %s: no permission to open it read-write: %w", path, err)
	default:
		return fmt.Errorf("open store %s: %w", path, err)
	}
}

func hasBuckets(tx *bolt.Tx) bool {
	k, _ := tx.Cursor().First()
	return k != nil
}

func readMeta(meta *bolt.Bucket, name []byte) (int64, error) {
	v := meta.Get(name)
	if v == nil {
		return 0, nil
	}
	rev, err := decodeRevision(v)
	if err != nil {
		return 0, fmt.Errorf("meta %s: %w", name, err)
	}
	return rev, nil
}

// Revision is the revision of the newest change that watchers have been given.
func (s *Bolt) Revision() int64 { return s.rev.Load() }

// Collectors returns the store's prometheus metrics for the caller to register.
func (s *Bolt) Collectors() []prometheus.Collector { return s.metrics.collectors() }

// read runs fn in a read transaction; bbolt lets it run alongside the committer.
func (s *Bolt) read(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.db.View(fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("store %s: %w", s.path, ErrClosed)
	}
	return err
}

func (s *Bolt) Get(ctx context.Context, key string) (KV, error) {
	var kv KV
	err := s.read(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketObjects).Get([]byte(key))
		if v == nil {
			return fmt.Errorf("get %q: %w", key, ErrNotFound)
		}
		var err error
		kv, err = decodeObject(key, v)
		return err
	})
	return kv, err
}

func (s *Bolt) List(ctx context.Context, prefix string) ([]KV, int64, error) {
	return s.ListAt(ctx, prefix, 0, false)
}

// ListAt serves an exact past revision from the event log: see rollBack.
func (s *Bolt) ListAt(ctx context.Context, prefix string, rev int64, exact bool) ([]KV, int64, error) {
	var kvs []KV
	var current int64
	err := s.read(ctx, func(tx *bolt.Tx) error {
		var err error
		if current, err = readMeta(tx.Bucket(bucketMeta), metaRevision); err != nil {
			return err
		}
		if rev > current {
			return fmt.Errorf("revision %d (the store is at %d): %w", rev, current, ErrFutureRevision)
		}
		p := []byte(prefix)
		c := tx.Bucket(bucketObjects).Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			kv, err := decodeObject(string(k), v)
			if err != nil {
				return err
			}
			kvs = append(kvs, kv)
		}
		if exact && rev > 0 && rev < current {
			kvs, err = rollBack(tx, kvs, prefix, rev)
		}
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list %q: %w", prefix, err)
	}
	if exact && rev > 0 {
		return kvs, rev, nil
	}
	return kvs, current, nil
}

// rollBack turns kvs, the current objects with the prefix, into those at revision rev by
// undoing the logged changes after rev. An undone change restores the value before it,
// whose modification revision is that of the key's previous logged change: a key whose
// version at rev was written before the oldest logged change cannot be restored, and rev
// then counts as compacted.
func rollBack(tx *bolt.Tx, kvs []KV, prefix string, rev int64) ([]KV, error) {
	compacted, err := readMeta(tx.Bucket(bucketMeta), metaCompacted)
	if err != nil {
		return nil, err
	}
	if rev < compacted {
		return nil, fmt.Errorf("revision %d (oldest retained is %d): %w", rev, compacted, ErrCompacted)
	}
	last := map[string]int64{}   // a key's latest change at or before rev
	restored := map[string]*KV{} // a key changed after rev: its version at rev (nil: absent)
	c := tx.Bucket(bucketEvents).Cursor()
	for k, v := c.Seek(revisionKey(compacted + 1)); k != nil; k, v = c.Next() {
		r, err := decodeRevision(k)
		if err != nil {
			return nil, err
		}
		key, err := eventKey(v)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", r, err)
		}
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		if r <= rev {
			last[key] = r
			continue
		}
		if _, ok := restored[key]; ok {
			continue // only the first change after rev tells the version at rev
		}
		ev, err := decodeEvent(r, v)
		if err != nil {
			return nil, err
		}
		if ev.Type == Added {
			restored[key] = nil
			continue
		}
		modified, ok := last[key]
		if !ok {
			return nil, fmt.Errorf("revision %d: %q was last written before the oldest retained change %d: %w", rev, key, compacted+1, ErrCompacted)
		}
		restored[key] = &KV{Key: key, Value: ev.PrevValue, Revision: modified}
	}
	return restore(kvs, restored), nil
}

func (s *Bolt) Create(ctx context.Context, key string, value []byte) (int64, error) {
	res := s.write(ctx, &writeRequest{op: opCreate, key: key, value: value})
	return res.rev, res.err
}

func (s *Bolt) Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error) {
	res := s.write(ctx, &writeRequest{op: opUpdate, key: key, value: value, expected: expectedRevision})
	return res.rev, res.err
}

func (s *Bolt) Delete(ctx context.Context, key string, expectedRevision int64) (KV, int64, error) {
	res := s.write(ctx, &writeRequest{op: opDelete, key: key, expected: expectedRevision})
	return res.deleted, res.rev, res.err
}

func (s *Bolt) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan Event, error) {
	return s.watch.watch(ctx, prefix, fromRevision)
}

// history reads retained events from the on-disk log for watches older than the ring.
func (s *Bolt) history(ctx context.Context, prefix string, after int64, limit int) ([]Event, int64, error) {
	var events []Event
	scanned := after
	err := s.read(ctx, func(tx *bolt.Tx) error {
		compacted, err := readMeta(tx.Bucket(bucketMeta), metaCompacted)
		if err != nil {
			return err
		}
		if after < compacted {
			return &WatchCompactedError{What: fmt.Sprintf("history after revision %d", after), Oldest: compacted}
		}
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(revisionKey(after + 1)); k != nil && len(events) < limit; k, v = c.Next() {
			rev, err := decodeRevision(k)
			if err != nil {
				return err
			}
			scanned = rev
			key, err := eventKey(v)
			if err != nil {
				return fmt.Errorf("event %d: %w", rev, err)
			}
			if !strings.HasPrefix(key, prefix) {
				continue
			}
			ev, err := decodeEvent(rev, v)
			if err != nil {
				return err
			}
			events = append(events, ev)
		}
		return nil
	})
	return events, scanned, err
}

// Compact drops the event history at and below rev: watches from before rev then fail with
// ErrCompacted. The log is also trimmed to HistoryLimit events on every commit.
func (s *Bolt) Compact(ctx context.Context, rev int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var compacted int64
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		current, err := readMeta(meta, metaRevision)
		if err != nil {
			return err
		}
		if rev > current {
			return fmt.Errorf("revision %d is newer than the store revision %d", rev, current)
		}
		if compacted, err = readMeta(meta, metaCompacted); err != nil || rev <= compacted {
			return err
		}
		compacted = rev
		return compactLog(tx, rev)
	})
	if err != nil {
		return fmt.Errorf("compact store %s to revision %d: %w", s.path, rev, err)
	}
	s.watch.setCompacted(compacted)
	return nil
}

// compactLog deletes the events from the last compaction up to upTo and records upTo.
// Revisions are dense (every revision is one event), so the range is deleted key by key.
func compactLog(tx *bolt.Tx, upTo int64) error {
	meta, log := tx.Bucket(bucketMeta), tx.Bucket(bucketEvents)
	from, err := readMeta(meta, metaCompacted)
	if err != nil {
		return err
	}
	for rev := from + 1; rev <= upTo; rev++ {
		if err := log.Delete(revisionKey(rev)); err != nil {
			return err
		}
	}
	return meta.Put(metaCompacted, revisionKey(upTo))
}

// Close stops taking writes (those in flight finish), ends every watch and closes the file.
func (s *Bolt) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		<-s.stopped
		s.watch.close()
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("close store %s: %w", s.path, err)
		}
	})
	return s.closeErr
}
