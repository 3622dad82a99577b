package admission

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// liveTTL is how long a live lookup is trusted, as kube-apiserver's LimitRanger and
// ResourceQuota keep theirs.
const liveTTL = 30 * time.Second

// LiveLookup covers an informer's lag for objects that govern a namespace (LimitRanges,
// ResourceQuotas): when the informer holds none in a namespace, the namespace is listed
// through the API once and the answer kept for 30 s, so an object created a moment before
// a write is not missed and a namespace without any costs one LIST per 30 s, not one per
// write.
type LiveLookup[T any] struct {
	List func(ctx context.Context, namespace string) ([]T, error)

	mu      sync.Mutex
	entries map[string]liveEntry[T]
	// lists shares one LIST among the writes that miss the same namespace at once (the
	// first creates in a new namespace), instead of one LIST each.
	lists singleflight.Group
}

type liveEntry[T any] struct {
	expiry time.Time
	items  []T
}

// Get returns the objects of namespace: cached ones if the informer had some, else the
// live lookup's.
func (l *LiveLookup[T]) Get(ctx context.Context, namespace string, cached []T) ([]T, error) {
	if len(cached) > 0 {
		return cached, nil
	}
	now := time.Now()
	l.mu.Lock()
	e, ok := l.entries[namespace]
	l.mu.Unlock()
	if ok && now.Before(e.expiry) {
		return e.items, nil
	}
	v, err, _ := l.lists.Do(namespace, func() (any, error) {
		items, err := l.List(ctx, namespace)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.entries == nil {
			l.entries = map[string]liveEntry[T]{}
		}
		for ns, e := range l.entries { // forget expired namespaces so the map stays small
			if now.After(e.expiry) {
				delete(l.entries, ns)
			}
		}
		l.entries[namespace] = liveEntry[T]{expiry: now.Add(liveTTL), items: items}
		return items, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]T), nil
}
