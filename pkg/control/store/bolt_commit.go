package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

type writeOp int

const (
	opCreate writeOp = iota
	opUpdate
	opDelete
)

var opNames = map[writeOp]string{opCreate: "create", opUpdate: "update", opDelete: "delete"}

type writeRequest struct {
	// ctx is the writer's: a request whose ctx is done when its commit is built is refused,
	// unless its CommitGuard has already promised the commit.
	ctx      context.Context
	guarded  bool
	op       writeOp
	key      string
	value    []byte
	expected int64
	// done receives exactly one result once the committer has taken the request.
	done chan writeResult
}

type writeResult struct {
	rev     int64
	deleted KV // for Delete: the object as it was
	err     error
}

// errNothingToCommit rolls back a batch in which every write was refused (no fsync needed).
var errNothingToCommit = errors.New("nothing to commit")

// write hands a request to the committer and waits for its commit. As in Kubernetes, a
// request whose ctx is done is not applied: it is refused here (a select would pick the
// committer or ctx at random when both are ready) and by the committer if ctx ends while it
// waits for its turn. A request whose CommitGuard promised the commit is committed even if
// ctx ends meanwhile: its client will get the real answer. Once taken, a request is
// answered even if ctx ends, so the caller learns whether it was applied.
func (s *Bolt) write(ctx context.Context, r *writeRequest) writeResult {
	if r.key == "" || len(r.key) > bolt.MaxKeySize {
		return writeResult{err: fmt.Errorf("%s %q: key must be 1 to %d bytes", opNames[r.op], r.key, bolt.MaxKeySize)}
	}
	guard, err := mayCommit(ctx)
	if err != nil {
		return writeResult{err: fmt.Errorf("%s %q: %w", opNames[r.op], r.key, err)}
	}
	r.ctx, r.guarded, r.done = ctx, guard != nil, make(chan writeResult, 1)
	abandon := ctx.Done()
	if guard != nil {
		abandon = nil
	}
	res := s.send(r, abandon)
	if guard != nil {
		guard.settle(res.err == nil)
	}
	return res
}

// send hands r to the committer and waits for its answer, unless the store closes or
// abandon (the writer's ctx) is done first.
func (s *Bolt) send(r *writeRequest, abandon <-chan struct{}) writeResult {
	select {
	case s.writes <- r:
		return <-r.done
	case <-s.closing:
		return writeResult{err: fmt.Errorf("%s %q: %w", opNames[r.op], r.key, ErrClosed)}
	case <-abandon:
		return writeResult{err: fmt.Errorf("%s %q: %w", opNames[r.op], r.key, r.ctx.Err())}
	}
}

// commitLoop is the only writer. While one transaction commits, new requests wait on the
// unbuffered channel; the next round takes all of them into one transaction (group commit).
func (s *Bolt) commitLoop() {
	defer close(s.stopped)
	batch := make([]*writeRequest, 0, s.opts.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case r := <-s.writes:
			batch = append(batch, r)
		case <-s.closing:
			return
		}
	gather:
		for len(batch) < s.opts.MaxBatch {
			select {
			case r := <-s.writes:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		s.commit(batch)
	}
}

// commit applies a batch in one transaction: each accepted write takes the next revision,
// updates its object and appends its event; refused writes (conflicts...) change nothing.
// Watchers get the events after the commit and before any writer is answered.
func (s *Bolt) commit(batch []*writeRequest) {
	start := time.Now()
	results := make([]writeResult, len(batch))
	var events []Event
	var rev, compacted int64
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta, objects, log := tx.Bucket(bucketMeta), tx.Bucket(bucketObjects), tx.Bucket(bucketEvents)
		var err error
		if rev, err = readMeta(meta, metaRevision); err != nil {
			return err
		}
		if compacted, err = readMeta(meta, metaCompacted); err != nil {
			return err
		}
		for i, r := range batch {
			if err := r.ctx.Err(); err != nil && !r.guarded {
				results[i].err = fmt.Errorf("%s %q: %w", opNames[r.op], r.key, err)
				continue
			}
			ev, deleted, err := prepare(objects, r, rev+1)
			if err != nil {
				results[i].err = err
				continue
			}
			rev++
			if err := persist(objects, log, ev); err != nil {
				return err
			}
			results[i] = writeResult{rev: rev, deleted: deleted}
			events = append(events, ev)
		}
		if len(events) == 0 {
			return errNothingToCommit
		}
		if err := meta.Put(metaRevision, revisionKey(rev)); err != nil {
			return err
		}
		if rev-compacted > int64(s.opts.HistoryLimit) {
			compacted = rev - int64(s.opts.HistoryLimit)
			return compactLog(tx, compacted)
		}
		return nil
	})
	switch {
	case errors.Is(err, errNothingToCommit):
	case err != nil:
		for i, r := range batch {
			results[i] = writeResult{err: fmt.Errorf("%s %q: commit to %s: %w", opNames[r.op], r.key, s.path, err)}
		}
	default:
		s.rev.Store(rev)
		s.watch.setCompacted(compacted)
		s.watch.publish(events)
		s.metrics.commitDuration.Observe(time.Since(start).Seconds())
		s.metrics.batchSize.Observe(float64(len(events)))
	}
	for i, r := range batch {
		r.done <- results[i]
	}
}

// prepare checks a write's precondition against the current object and builds its event.
func prepare(objects *bolt.Bucket, r *writeRequest, rev int64) (Event, KV, error) {
	var cur KV
	raw := objects.Get([]byte(r.key))
	if raw != nil {
		var err error
		if cur, err = decodeObject(r.key, raw); err != nil {
			return Event{}, KV{}, fmt.Errorf("%s %q: %w", opNames[r.op], r.key, err)
		}
	}
	switch {
	case r.op == opCreate && raw != nil:
		return Event{}, KV{}, fmt.Errorf("create %q: %w", r.key, ErrExists)
	case r.op == opCreate:
		return Event{Type: Added, Key: r.key, Value: r.value, Revision: rev}, KV{}, nil
	case raw == nil:
		return Event{}, KV{}, fmt.Errorf("%s %q: %w", opNames[r.op], r.key, ErrNotFound)
	case (r.op == opUpdate || r.expected != 0) && cur.Revision != r.expected:
		return Event{}, KV{}, fmt.Errorf("%s %q: expected revision %d, current is %d: %w", opNames[r.op], r.key, r.expected, cur.Revision, ErrConflict)
	case r.op == opUpdate:
		return Event{Type: Modified, Key: r.key, Value: r.value, PrevValue: cur.Value, Revision: rev}, KV{}, nil
	default:
		return Event{Type: Deleted, Key: r.key, Value: cur.Value, PrevValue: cur.Value, Revision: rev}, cur, nil
	}
}

func persist(objects, log *bolt.Bucket, ev Event) error {
	var err error
	if ev.Type == Deleted {
		err = objects.Delete([]byte(ev.Key))
	} else {
		err = objects.Put([]byte(ev.Key), encodeObject(ev.Revision, ev.Value))
	}
	if err != nil {
		return err
	}
	return log.Put(revisionKey(ev.Revision), encodeEvent(ev))
}
