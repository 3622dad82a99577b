// Package store is the storage engine under miniapi: a key/value store with one global,
// strictly increasing revision, compare-and-swap writes on a key's modification revision and
// watches that resume from a past revision. Engines: bbolt (embedded, one file) and etcd.
package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

var (
	// ErrNotFound: the key is absent.
	ErrNotFound = errors.New("key not found")
	// ErrExists: Create of a key that already exists.
	ErrExists = errors.New("key already exists")
	// ErrConflict: the expected revision is not the key's current modification revision.
	ErrConflict = errors.New("revision conflict")
	// ErrCompacted: a watch asked for history older than the store retains.
	ErrCompacted = errors.New("requested revision has been compacted")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store is closed")
	// ErrFutureRevision: a read asked for a revision the store has not reached.
	ErrFutureRevision = errors.New("requested revision is newer than the store's")
)

// WatchCompactedError is ErrCompacted for a watch, naming the oldest revision a watch can
// still resume from, which kube-apiserver's "too old resource version" error names too.
type WatchCompactedError struct {
	What   string // the watch and the revision it asked for
	Oldest int64
}

func (e *WatchCompactedError) Error() string {
	return fmt.Sprintf("%s (oldest retained is %d): %v", e.What, e.Oldest, ErrCompacted)
}

func (e *WatchCompactedError) Unwrap() error { return ErrCompacted }

// KV is one stored object.
type KV struct {
	Key   string
	Value []byte
	// Revision at which this key was last modified: the object's resourceVersion.
	Revision int64
	// Stale: the value was stored encrypted with a provider or key other than the one that
	// writes now (encryption at rest), so writing it back unchanged must still store it.
	Stale bool
}

// EventType says what a change did to its key.
type EventType string

const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
)

// Event is one change to one key. Events are shared between watchers: never modify
// Value or PrevValue.
type Event struct {
	Type EventType
	Key  string
	// Value is the new value; for Deleted the last value before deletion.
	Value []byte
	// PrevValue is the value before the change (nil for Added).
	PrevValue []byte
	// Revision of this change.
	Revision int64
	// Stale is KV.Stale of Value.
	Stale bool
}

// Interface is what the API server codes against; every engine implements it.
type Interface interface {
	Get(ctx context.Context, key string) (KV, error)
	// List returns all keys with the prefix, sorted by key, and the store revision they were read at.
	List(ctx context.Context, prefix string) ([]KV, int64, error)
	// ListAt is List at revision rev (0: List). With exact, the keys as they were at rev, and
	// rev, or ErrCompacted when the store no longer retains what rev needs (what a paginated
	// or resourceVersionMatch=Exact LIST reads). Without, List as long as the store has
	// reached rev (NotOlderThan). Both fail with ErrFutureRevision when it has not.
	ListAt(ctx context.Context, prefix string, rev int64, exact bool) ([]KV, int64, error)
	// Create stores a new key and returns its revision. Create and Update may keep value as
	// the bytes their readers and watchers get (no copy): the caller must not change it after.
	Create(ctx context.Context, key string, value []byte) (int64, error)
	// Update replaces the value iff the key's current Revision == expectedRevision.
	Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error)
	// Delete removes the key; expectedRevision 0 means unconditional. Returns the deleted KV
	// and the delete revision.
	Delete(ctx context.Context, key string, expectedRevision int64) (KV, int64, error)
	// Watch streams, in revision order and without gaps, every change to keys with the prefix
	// with Revision > fromRevision. fromRevision 0 means "from now". A fromRevision older than
	// retained history returns ErrCompacted. The channel is closed when ctx ends, or when the
	// watcher falls too far behind (the caller then re-watches from its last revision).
	Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan Event, error)
	// Revision is the current store revision.
	Revision() int64
	Close() error
}

// restore turns kvs, keys sorted by key at some revision, into the keys at an earlier one:
// restored holds, for every key changed in between, its version then (nil: absent).
func restore(kvs []KV, restored map[string]*KV) []KV {
	out := make([]KV, 0, len(kvs)+len(restored))
	for _, kv := range kvs {
		if _, changed := restored[kv.Key]; !changed {
			out = append(out, kv)
		}
	}
	for _, kv := range restored {
		if kv != nil {
			out = append(out, *kv)
		}
	}
	slices.SortFunc(out, func(a, b KV) int { return strings.Compare(a.Key, b.Key) })
	return out
}
