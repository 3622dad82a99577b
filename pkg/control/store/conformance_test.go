package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// openFunc opens a store on the storage of one conformance case. Calling it again after the
// case closed the store reopens the same storage. Engines also close stores in t.Cleanup.
type openFunc func(t *testing.T) Interface

// closedAtEnd fails the test on a store that did not open and closes one that did when the
// test ends.
func closedAtEnd[S io.Closer](t testing.TB, s S, err error) S {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// compactor is what the compaction case needs beyond Interface.
type compactor interface {
	Compact(ctx context.Context, revision int64) error
}

// runConformance runs the cases every engine must pass. newStorage returns an opener on
// fresh, empty storage.
func runConformance(t *testing.T, newStorage func(t *testing.T) openFunc) {
	cases := []struct {
		name string
		run  func(t *testing.T, open openFunc)
	}{
		{"CreateGetList", testCreateGetList},
		{"CreateExisting", testCreateExisting},
		{"UpdateConflict", testUpdateConflict},
		{"DeletePrecondition", testDeletePrecondition},
		{"RevisionsIncrease", testRevisionsIncrease},
		{"WatchOrder", testWatchOrder},
		{"WatchResumeWhileWriting", testWatchResumeWhileWriting},
		{"WatchCompacted", testWatchCompacted},
		{"WatchEndsWithContext", testWatchEndsWithContext},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Reopen", testReopen},
		{"ListAt", testListAt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newStorage(t)) })
	}
}

const eventTimeout = 10 * time.Second

func mustCreate(t *testing.T, s Interface, key, value string) int64 {
	t.Helper()
	rev, err := s.Create(t.Context(), key, []byte(value))
	if err != nil {
		t.Fatalf("create %s: %v", key, err)
	}
	return rev
}

func mustUpdate(t *testing.T, s Interface, key, value string, expected int64) int64 {
	t.Helper()
	rev, err := s.Update(t.Context(), key, []byte(value), expected)
	if err != nil {
		t.Fatalf("update %s: %v", key, err)
	}
	return rev
}

func mustWatch(t *testing.T, s Interface, prefix string, from int64) <-chan Event {
	t.Helper()
	ch, err := s.Watch(t.Context(), prefix, from)
	if err != nil {
		t.Fatalf("watch %s from %d: %v", prefix, from, err)
	}
	return ch
}

// receive reads n events, failing on a closed channel or a timeout.
func receive(t *testing.T, ch <-chan Event, n int) []Event {
	t.Helper()
	timeout := time.After(eventTimeout)
	var got []Event
	for len(got) < n {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed after %d of %d events", len(got), n)
			}
			got = append(got, ev)
		case <-timeout:
			t.Fatalf("got %d of %d events in %s", len(got), n, eventTimeout)
		}
	}
	return got
}

func expectQuiet(t *testing.T, ch <-chan Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("unexpected event %s %s at %d", ev.Type, ev.Key, ev.Revision)
		}
	case <-time.After(200 * time.Millisecond):
	}
}

func sameEvent(a, b Event) bool {
	return a.Type == b.Type && a.Key == b.Key && a.Revision == b.Revision &&
		bytes.Equal(a.Value, b.Value) && bytes.Equal(a.PrevValue, b.PrevValue)
}

func expectEvents(t *testing.T, got, want []Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if !sameEvent(got[i], want[i]) {
			t.Fatalf("event %d: got %s %s rev %d value %q prev %q, want %s %s rev %d value %q prev %q", i,
				got[i].Type, got[i].Key, got[i].Revision, got[i].Value, got[i].PrevValue,
				want[i].Type, want[i].Key, want[i].Revision, want[i].Value, want[i].PrevValue)
		}
	}
}

func expectErr(t *testing.T, err, want error, key string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
	if !strings.Contains(err.Error(), key) {
		t.Fatalf("error %q does not name the key %q", err, key)
	}
}

func keysOf(kvs []KV) []string {
	var keys []string
	for _, kv := range kvs {
		keys = append(keys, kv.Key)
	}
	return keys
}

func testCreateGetList(t *testing.T, open openFunc) {
	s := open(t)
	ctx := t.Context()
	revs := map[string]int64{}
	for _, key := range []string{
		"/registry/pods/kube-system/c", "/registry/pods/default/b", "/registry/pods/default/a",
		"/registry/pods2/default/x", "/registry/podsx", "/registry/pod",
	} {
		revs[key] = mustCreate(t, s, key, "v:"+key)
	}

	kv, err := s.Get(ctx, "/registry/pods/default/a")
	if err != nil {
		t.Fatal(err)
	}
	if string(kv.Value) != "v:/registry/pods/default/a" || kv.Revision != revs[kv.Key] || kv.Key != "/registry/pods/default/a" {
		t.Fatalf("get: %+v", kv)
	}
	_, err = s.Get(ctx, "/registry/pods/default/missing")
	expectErr(t, err, ErrNotFound, "/registry/pods/default/missing")

	kvs, listRev, err := s.List(ctx, "/registry/pods/")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/registry/pods/default/a", "/registry/pods/default/b", "/registry/pods/kube-system/c"}
	if !slices.Equal(keysOf(kvs), want) {
		t.Fatalf("list /registry/pods/: %v, want %v", keysOf(kvs), want)
	}
	for _, kv := range kvs {
		if kv.Revision != revs[kv.Key] || string(kv.Value) != "v:"+kv.Key {
			t.Fatalf("list item %+v, want revision %d", kv, revs[kv.Key])
		}
	}
	if listRev != s.Revision() || listRev < revs["/registry/pod"] {
		t.Fatalf("list revision %d, store revision %d, newest write %d", listRev, s.Revision(), revs["/registry/pod"])
	}
	kvs, _, err = s.List(ctx, "/registry/pods/default/")
	if err != nil || len(kvs) != 2 {
		t.Fatalf("list /registry/pods/default/: %v %v", keysOf(kvs), err)
	}
	kvs, _, err = s.List(ctx, "/registry/none/")
	if err != nil || len(kvs) != 0 {
		t.Fatalf("list of an empty prefix: %v %v", keysOf(kvs), err)
	}
}

func testCreateExisting(t *testing.T, open openFunc) {
	s := open(t)
	rev := mustCreate(t, s, "/registry/a/x", "one")
	_, err := s.Create(t.Context(), "/registry/a/x", []byte("two"))
	expectErr(t, err, ErrExists, "/registry/a/x")
	kv, err := s.Get(t.Context(), "/registry/a/x")
	if err != nil || string(kv.Value) != "one" || kv.Revision != rev {
		t.Fatalf("after refused create: %+v %v", kv, err)
	}
	if s.Revision() != rev {
		t.Fatalf("a refused create moved the revision from %d to %d", rev, s.Revision())
	}
}

func testUpdateConflict(t *testing.T, open openFunc) {
	s := open(t)
	ctx := t.Context()
	r1 := mustCreate(t, s, "/registry/a/x", "one")
	r2 := mustUpdate(t, s, "/registry/a/x", "two", r1)
	if r2 <= r1 {
		t.Fatalf("update revision %d not after create revision %d", r2, r1)
	}
	_, err := s.Update(ctx, "/registry/a/x", []byte("stale"), r1)
	expectErr(t, err, ErrConflict, "/registry/a/x")
	kv, err := s.Get(ctx, "/registry/a/x")
	if err != nil || string(kv.Value) != "two" || kv.Revision != r2 {
		t.Fatalf("after conflicting update: %+v %v", kv, err)
	}
	_, err = s.Update(ctx, "/registry/a/missing", []byte("x"), r2)
	expectErr(t, err, ErrNotFound, "/registry/a/missing")
}

func testDeletePrecondition(t *testing.T, open openFunc) {
	s := open(t)
	ctx := t.Context()
	r1 := mustCreate(t, s, "/registry/a/x", "one")
	r2 := mustUpdate(t, s, "/registry/a/x", "two", r1)
	_, _, err := s.Delete(ctx, "/registry/a/x", r1)
	expectErr(t, err, ErrConflict, "/registry/a/x")
	if _, err := s.Get(ctx, "/registry/a/x"); err != nil {
		t.Fatalf("a refused delete removed the key: %v", err)
	}
	kv, delRev, err := s.Delete(ctx, "/registry/a/x", r2)
	if err != nil {
		t.Fatal(err)
	}
	if kv.Key != "/registry/a/x" || string(kv.Value) != "two" || kv.Revision != r2 || delRev <= r2 {
		t.Fatalf("delete returned %+v at %d", kv, delRev)
	}
	_, err = s.Get(ctx, "/registry/a/x")
	expectErr(t, err, ErrNotFound, "/registry/a/x")
	_, _, err = s.Delete(ctx, "/registry/a/x", 0)
	expectErr(t, err, ErrNotFound, "/registry/a/x")

	mustCreate(t, s, "/registry/a/y", "y")
	if _, _, err := s.Delete(ctx, "/registry/a/y", 0); err != nil {
		t.Fatalf("unconditional delete: %v", err)
	}
}

func testRevisionsIncrease(t *testing.T, open openFunc) {
	s := open(t)
	last := s.Revision()
	step := func(rev int64) {
		t.Helper()
		if rev <= last {
			t.Fatalf("revision %d after %d", rev, last)
		}
		if s.Revision() != rev {
			t.Fatalf("store revision %d after a write at %d", s.Revision(), rev)
		}
		last = rev
	}
	for i := range 20 {
		key := fmt.Sprintf("/registry/k%d/obj", i%3)
		if i < 3 {
			step(mustCreate(t, s, key, "v"))
			continue
		}
		kv, err := s.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		step(mustUpdate(t, s, key, fmt.Sprint(i), kv.Revision))
	}
	_, rev, err := s.Delete(t.Context(), "/registry/k0/obj", 0)
	if err != nil {
		t.Fatal(err)
	}
	step(rev)
}

func testWatchOrder(t *testing.T, open openFunc) {
	s := open(t)
	ctx := t.Context()
	all := mustWatch(t, s, "/registry/pods/", 0)
	one := mustWatch(t, s, "/registry/pods/ns1/", 0)

	ra := mustCreate(t, s, "/registry/pods/ns1/a", "a1")
	mustCreate(t, s, "/registry/pods2/ns1/a", "not watched")
	rb := mustCreate(t, s, "/registry/pods/ns2/b", "b1")
	ra2 := mustUpdate(t, s, "/registry/pods/ns1/a", "a2", ra)
	_, rd, err := s.Delete(ctx, "/registry/pods/ns1/a", ra2)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Type: Added, Key: "/registry/pods/ns1/a", Value: []byte("a1"), Revision: ra},
		{Type: Added, Key: "/registry/pods/ns2/b", Value: []byte("b1"), Revision: rb},
		{Type: Modified, Key: "/registry/pods/ns1/a", Value: []byte("a2"), PrevValue: []byte("a1"), Revision: ra2},
		{Type: Deleted, Key: "/registry/pods/ns1/a", Value: []byte("a2"), PrevValue: []byte("a2"), Revision: rd},
	}
	expectEvents(t, receive(t, all, 4), want)
	expectQuiet(t, all)
	expectEvents(t, receive(t, one, 3), []Event{want[0], want[2], want[3]})
	expectQuiet(t, one)
}

// ackLog records acknowledged writes as the events they imply, in acknowledgement order.
type ackLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *ackLog) add(ev Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

// after returns the acknowledged events with Revision > rev and the prefix.
func (l *ackLog) after(rev int64, prefix string) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, ev := range l.events {
		if ev.Revision > rev && strings.HasPrefix(ev.Key, prefix) {
			out = append(out, ev)
		}
	}
	return out
}

// writeStream makes n acknowledged changes, one at a time so acknowledgement order is
// revision order: creates, updates and deletes under /registry/stream/ and, every fifth
// write, a key outside it. After `signalAt` writes it closes `reached`.
func writeStream(t *testing.T, s Interface, log *ackLog, n, signalAt int, reached chan<- struct{}) {
	ctx := context.Background()
	current := map[string]KV{}
	for i := range n {
		if i == signalAt {
			close(reached)
		}
		key := fmt.Sprintf("/registry/stream/k%02d", i%17)
		if i%5 == 4 {
			key = fmt.Sprintf("/registry/streamz/k%02d", i%17)
		}
		value := []byte(fmt.Sprint("v", i))
		prev, exists := current[key]
		var ev Event
		var err error
		switch {
		case !exists:
			ev = Event{Type: Added, Key: key, Value: value}
			ev.Revision, err = s.Create(ctx, key, value)
		case i%7 == 0:
			ev = Event{Type: Deleted, Key: key, Value: prev.Value, PrevValue: prev.Value}
			_, ev.Revision, err = s.Delete(ctx, key, prev.Revision)
		default:
			ev = Event{Type: Modified, Key: key, Value: value, PrevValue: prev.Value}
			ev.Revision, err = s.Update(ctx, key, value, prev.Revision)
		}
		if err != nil {
			t.Errorf("write %d: %v", i, err)
			return
		}
		if ev.Type == Deleted {
			delete(current, key)
		} else {
			current[key] = KV{Key: key, Value: value, Revision: ev.Revision}
		}
		log.add(ev)
	}
}

func testWatchResumeWhileWriting(t *testing.T, open openFunc) {
	s := open(t)
	const prefix = "/registry/stream/"
	log := &ackLog{}
	start := s.Revision()
	reached := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		writeStream(t, s, log, 600, 200, reached)
	}()
	<-reached

	// Resume from several points, some behind and one at the head, while writes go on.
	acked := log.after(start, "")
	froms := []int64{start, acked[10].Revision, acked[len(acked)/2].Revision, acked[len(acked)-1].Revision, 0}
	type stream struct {
		from int64
		ch   <-chan Event
	}
	var streams []stream
	for _, from := range froms {
		if from == 0 {
			from = s.Revision() // the revision "from now" starts at, at the latest
		}
		streams = append(streams, stream{from, mustWatch(t, s, prefix, from)})
	}
	<-done
	if t.Failed() {
		return
	}
	for i, st := range streams {
		if i == len(streams)-1 {
			// A watch "from now" starts at a revision between st.from and the next write.
			got := receive(t, st.ch, 1)
			want := log.after(got[0].Revision-1, prefix)
			if len(want) == 0 || got[0].Revision <= start {
				t.Fatalf("watch from now began with revision %d", got[0].Revision)
			}
			expectEvents(t, append(got, receive(t, st.ch, len(want)-1)...), want)
		} else {
			want := log.after(st.from, prefix)
			expectEvents(t, receive(t, st.ch, len(want)), want)
		}
		expectQuiet(t, st.ch)
	}
}

func testWatchCompacted(t *testing.T, open openFunc) {
	s := open(t)
	c, ok := s.(compactor)
	if !ok {
		t.Fatalf("%T has no Compact method", s)
	}
	var revs []int64
	for i := range 10 {
		revs = append(revs, mustCreate(t, s, fmt.Sprintf("/registry/c/k%d", i), "v"))
	}
	if err := c.Compact(t.Context(), revs[5]); err != nil {
		t.Fatal(err)
	}
	_, err := s.Watch(t.Context(), "/registry/c/", revs[1])
	if !errors.Is(err, ErrCompacted) {
		t.Fatalf("watch from compacted revision %d: got %v, want ErrCompacted", revs[1], err)
	}
	ch := mustWatch(t, s, "/registry/c/", revs[5])
	got := receive(t, ch, 4)
	for i, ev := range got {
		if ev.Revision != revs[6+i] {
			t.Fatalf("after compaction, event %d has revision %d, want %d", i, ev.Revision, revs[6+i])
		}
	}
	// Objects survive compaction of their history.
	if kvs, _, err := s.List(t.Context(), "/registry/c/"); err != nil || len(kvs) != 10 {
		t.Fatalf("list after compaction: %d keys, %v", len(kvs), err)
	}
}

func testWatchEndsWithContext(t *testing.T, open openFunc) {
	s := open(t)
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := s.Watch(ctx, "/registry/w/", 0)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.After(eventTimeout)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("watch channel still open after its context ended")
		}
	}
}

func testConcurrentWriters(t *testing.T, open openFunc) {
	s := open(t)
	const writers, perWriter = 64, 10
	ch := mustWatch(t, s, "/registry/cw/", s.Revision())
	var mu sync.Mutex
	revOf := map[string]int64{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				key := fmt.Sprintf("/registry/cw/w%02d-%d", w, i)
				rev, err := s.Create(context.Background(), key, []byte(key))
				if err != nil {
					t.Errorf("create %s: %v", key, err)
					return
				}
				mu.Lock()
				revOf[key] = rev
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	seen := map[int64]string{}
	for key, rev := range revOf {
		if other, dup := seen[rev]; dup {
			t.Fatalf("%s and %s both got revision %d", key, other, rev)
		}
		seen[rev] = key
	}
	events := receive(t, ch, writers*perWriter)
	for i, ev := range events {
		if i > 0 && ev.Revision <= events[i-1].Revision {
			t.Fatalf("event %d: revision %d after %d", i, ev.Revision, events[i-1].Revision)
		}
		if ev.Type != Added || revOf[ev.Key] != ev.Revision || string(ev.Value) != ev.Key {
			t.Fatalf("event %s %s at %d, the create was acknowledged at %d", ev.Type, ev.Key, ev.Revision, revOf[ev.Key])
		}
	}
	expectQuiet(t, ch)
}

func testReopen(t *testing.T, open openFunc) {
	s := open(t)
	ctx := t.Context()
	r1 := mustCreate(t, s, "/registry/r/a", "a1")
	r2 := mustUpdate(t, s, "/registry/r/a", "a2", r1)
	mustCreate(t, s, "/registry/r/b", "b1")
	_, r4, err := s.Delete(ctx, "/registry/r/b", 0)
	if err != nil {
		t.Fatal(err)
	}
	before := s.Revision()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	s = open(t)
	if s.Revision() != before {
		t.Fatalf("revision after reopen %d, before %d", s.Revision(), before)
	}
	kv, err := s.Get(ctx, "/registry/r/a")
	if err != nil || string(kv.Value) != "a2" || kv.Revision != r2 {
		t.Fatalf("after reopen: %+v %v", kv, err)
	}
	if _, err := s.Get(ctx, "/registry/r/b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted key after reopen: %v", err)
	}
	// History survives: a watch resumes from before the restart.
	ch := mustWatch(t, s, "/registry/r/", r1)
	r5 := mustCreate(t, s, "/registry/r/c", "c1")
	if r5 <= r4 {
		t.Fatalf("revision went backwards after reopen: %d after %d", r5, r4)
	}
	got := receive(t, ch, 4)
	wantRevs := []int64{r2, got[1].Revision, r4, r5}
	for i, ev := range got {
		if ev.Revision != wantRevs[i] {
			t.Fatalf("resumed event %d (%s %s) at %d, want %d", i, ev.Type, ev.Key, ev.Revision, wantRevs[i])
		}
	}
	if got[1].Key != "/registry/r/b" || got[1].Type != Added || got[2].Type != Deleted {
		t.Fatalf("resumed events: %+v", got)
	}
}

// ListAt lists the past exactly, the present not older than a revision, refuses revisions
// the store has not reached and, after compaction, those it no longer has.
func testListAt(t *testing.T, open openFunc) {
	s := open(t)
	ctx := t.Context()
	a := mustCreate(t, s, "/registry/l/a", "a1")
	b := mustCreate(t, s, "/registry/l/b", "b1")
	mustCreate(t, s, "/registry/other/x", "x")
	c := mustCreate(t, s, "/registry/l/c", "c1")
	b2 := mustUpdate(t, s, "/registry/l/b", "b2", b)
	if _, _, err := s.Delete(ctx, "/registry/l/c", 0); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "/registry/l/d", "d1")
	mustUpdate(t, s, "/registry/l/a", "a2", a)
	now := s.Revision()

	describe := func(kvs []KV) string {
		var out []string
		for _, kv := range kvs {
			out = append(out, fmt.Sprintf("%s=%s@%d", kv.Key, kv.Value, kv.Revision))
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		rev  int64
		want string
	}{
		{c, fmt.Sprintf("/registry/l/a=a1@%d /registry/l/b=b1@%d /registry/l/c=c1@%d", a, b, c)},
		{b2, fmt.Sprintf("/registry/l/a=a1@%d /registry/l/b=b2@%d /registry/l/c=c1@%d", a, b2, c)},
		{a, fmt.Sprintf("/registry/l/a=a1@%d", a)},
	} {
		kvs, rev, err := s.ListAt(ctx, "/registry/l/", tc.rev, true)
		if err != nil || rev != tc.rev || describe(kvs) != tc.want {
			t.Errorf("exact list at %d: %s at %d, %v; want %s at %d", tc.rev, describe(kvs), rev, err, tc.want, tc.rev)
		}
	}
	current, _, err := s.List(ctx, "/registry/l/")
	if err != nil {
		t.Fatal(err)
	}
	for _, exact := range []bool{true, false} {
		kvs, rev, err := s.ListAt(ctx, "/registry/l/", now, exact)
		if err != nil || rev != now || describe(kvs) != describe(current) {
			t.Errorf("list at the current revision %d (exact %v): %s at %d, %v; want %s", now, exact, describe(kvs), rev, err, describe(current))
		}
	}
	if kvs, rev, err := s.ListAt(ctx, "/registry/l/", c, false); err != nil || rev < now || describe(kvs) != describe(current) {
		t.Errorf("list not older than %d: %s at %d, %v; want the present", c, describe(kvs), rev, err)
	}
	for _, exact := range []bool{true, false} {
		if _, _, err := s.ListAt(ctx, "/registry/l/", now+100, exact); !errors.Is(err, ErrFutureRevision) {
			t.Errorf("list at future revision %d (exact %v): %v, want ErrFutureRevision", now+100, exact, err)
		}
	}
	if err := s.(compactor).Compact(ctx, b2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ListAt(ctx, "/registry/l/", c, true); !errors.Is(err, ErrCompacted) {
		t.Errorf("exact list at %d, compacted to %d: %v, want ErrCompacted", c, b2, err)
	}
}
