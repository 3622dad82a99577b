package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// historyFunc reads, in revision order, up to limit retained events with Revision > after and
// returns those whose key has the prefix plus the revision it scanned up to. It fails with
// ErrCompacted when events after `after` are no longer retained.
type historyFunc func(ctx context.Context, prefix string, after int64, limit int) (events []Event, scannedTo int64, err error)

// historyChunk bounds one history read so a replaying watcher holds no read transaction long.
const historyChunk = 1024

// broadcaster fans committed events out to watchers from memory. It keeps a ring of recent
// events, so that most watches resuming from a past revision need no storage read, and falls
// back to the engine's history for older revisions. Publishing never blocks: a watcher whose
// queue overflows is closed and re-watches from its last revision.
type broadcaster struct {
	history    historyFunc
	queueLimit int
	onSlow     func(prefix string)

	mu sync.Mutex
	// ring holds every published event with Revision > covers.
	ring   ring
	covers int64
	// last is the revision of the newest published event (or the store revision at open).
	last int64
	// compacted: history at or below this revision is gone; watches from before it fail.
	compacted int64
	watchers  map[*watcher]struct{}
	closed    bool
}

type watcher struct {
	prefix string
	out    chan Event
	// The fields below are guarded by broadcaster.mu.
	live  bool  // receiving published events into queue
	after int64 // only events with Revision > after are queued
	queue []Event
	wake  chan struct{} // capacity 1: "queue is not empty"
	kill  chan struct{} // closed when the broadcaster drops this watcher
	dead  bool
}

func newBroadcaster(rev, compacted int64, ringSize, queueLimit int, history historyFunc, onSlow func(string)) *broadcaster {
	return &broadcaster{
		history:    history,
		queueLimit: queueLimit,
		onSlow:     onSlow,
		ring:       ring{buf: make([]Event, ringSize)},
		covers:     rev,
		last:       rev,
		compacted:  compacted,
		watchers:   map[*watcher]struct{}{},
	}
}

// publish hands committed events, in revision order, to the ring and to live watchers.
func (b *broadcaster) publish(events []Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ev := range events {
		if evicted, ok := b.ring.push(ev); ok {
			b.covers = evicted.Revision
		}
		b.last = ev.Revision
	}
	for w := range b.watchers {
		if !w.live {
			continue
		}
		queued := false
		for _, ev := range events {
			if ev.Revision <= w.after || !strings.HasPrefix(ev.Key, w.prefix) {
				continue
			}
			if len(w.queue) >= b.queueLimit {
				b.drop(w)
				b.onSlow(w.prefix)
				break
			}
			w.queue = append(w.queue, ev)
			queued = true
		}
		if queued && !w.dead {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}

// setCompacted records that history at or below rev is gone.
func (b *broadcaster) setCompacted(rev int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.compacted = max(b.compacted, rev)
}

// drop closes a watcher's stream from the broadcaster side. Callers hold b.mu.
func (b *broadcaster) drop(w *watcher) {
	if w.dead {
		return
	}
	w.dead = true
	w.queue = nil
	close(w.kill)
	delete(b.watchers, w)
}

func (b *broadcaster) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.watchers)
}

// close ends every watch stream; later watches fail with ErrClosed.
func (b *broadcaster) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for w := range b.watchers {
		b.drop(w)
	}
}

func (b *broadcaster) watch(ctx context.Context, prefix string, from int64) (<-chan Event, error) {
	if from < 0 {
		return nil, fmt.Errorf("watch %q from revision %d: revision must not be negative", prefix, from)
	}
	w := &watcher{prefix: prefix, out: make(chan Event, 64), wake: make(chan struct{}, 1), kill: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, fmt.Errorf("watch %q: %w", prefix, ErrClosed)
	}
	if from == 0 {
		from = b.last
	}
	if from < b.compacted {
		b.mu.Unlock()
		return nil, &WatchCompactedError{What: fmt.Sprintf("watch %q from revision %d", prefix, from), Oldest: b.compacted}
	}
	b.watchers[w] = struct{}{}
	pending, live := b.join(w, from)
	b.mu.Unlock()

	pos := from
	if !live {
		// The first history read is synchronous so that compaction is reported as an error.
		var err error
		if pending, pos, err = b.history(ctx, prefix, from, historyChunk); err != nil {
			b.remove(w)
			return nil, fmt.Errorf("watch %q from revision %d: %w", prefix, from, err)
		}
	}
	go b.serve(ctx, w, pending, pos)
	return w.out, nil
}

// join makes w live if the ring holds every event after pos, returning the ring's events for
// w; from then on publish queues the rest, so nothing is missed or repeated. pos may be ahead
// of the ring when history read an event committed but not yet published: w.after keeps
// that event from coming twice. Callers hold b.mu.
func (b *broadcaster) join(w *watcher, pos int64) ([]Event, bool) {
	if w.live {
		return nil, true
	}
	if pos < b.covers {
		return nil, false
	}
	w.live = true
	w.after = pos
	return b.ring.since(pos, w.prefix), true
}

// serve feeds one watcher: history until it reaches the ring, then the ring, then live events.
func (b *broadcaster) serve(ctx context.Context, w *watcher, pending []Event, pos int64) {
	defer b.remove(w)
	for {
		if !w.send(ctx, pending) {
			return
		}
		b.mu.Lock()
		if w.dead {
			b.mu.Unlock()
			return
		}
		tail, live := b.join(w, pos)
		b.mu.Unlock()
		if live {
			pending = tail
			break
		}
		var err error
		var scanned int64
		if pending, scanned, err = b.history(ctx, w.prefix, pos, historyChunk); err != nil || scanned == pos {
			// Compacted while replaying (or nothing to read although the ring has moved on,
			// which committed-before-published rules out): the caller re-watches.
			return
		}
		pos = scanned
	}
	if !w.send(ctx, pending) {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kill:
			return
		case <-w.wake:
		}
		b.mu.Lock()
		batch := w.queue
		w.queue = nil
		b.mu.Unlock()
		if !w.send(ctx, batch) {
			return
		}
	}
}

func (b *broadcaster) remove(w *watcher) {
	b.mu.Lock()
	b.drop(w)
	b.mu.Unlock()
	close(w.out)
}

func (w *watcher) send(ctx context.Context, events []Event) bool {
	for _, ev := range events {
		select {
		case w.out <- ev:
		case <-ctx.Done():
			return false
		case <-w.kill:
			return false
		}
	}
	return true
}

// ring is a fixed-size circular buffer of the most recent events, oldest first.
type ring struct {
	buf  []Event
	head int // index of the oldest event
	n    int
}

// push appends ev, returning the event it evicted when the ring was full.
func (r *ring) push(ev Event) (Event, bool) {
	if len(r.buf) == 0 {
		return ev, true
	}
	if r.n < len(r.buf) {
		r.buf[(r.head+r.n)%len(r.buf)] = ev
		r.n++
		return Event{}, false
	}
	evicted := r.buf[r.head]
	r.buf[r.head] = ev
	r.head = (r.head + 1) % len(r.buf)
	return evicted, true
}

func (r *ring) at(i int) *Event { return &r.buf[(r.head+i)%len(r.buf)] }

// since returns the events with Revision > after whose key has the prefix.
func (r *ring) since(after int64, prefix string) []Event {
	first := sort.Search(r.n, func(i int) bool { return r.at(i).Revision > after })
	var out []Event
	for i := first; i < r.n; i++ {
		if ev := r.at(i); strings.HasPrefix(ev.Key, prefix) {
			out = append(out, *ev)
		}
	}
	return out
}
