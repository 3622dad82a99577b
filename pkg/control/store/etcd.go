package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdTimeout bounds the calls that have no context of their own (open, Revision).
const etcdTimeout = 5 * time.Second

// Keepalive pings on each member's connection, kube-apiserver's values: a member cut off
// the network (no reset, its packets dropped) is noticed within their sum and its requests
// go to the other members, instead of every request given to it waiting for its deadline.
const (
	etcdKeepAliveTime    = 30 * time.Second
	etcdKeepAliveTimeout = 10 * time.Second
)

// Etcd is the engine on an etcd cluster: the store revision is etcd's, writes are
// compare-and-swap transactions on a key's ModRevision and watches are etcd's own. Several
// miniapi instances can share one cluster.
type Etcd struct {
	client    *clientv3.Client
	endpoints []string
	// prefix is put before every key, so that several stores (or tests) can share a cluster.
	prefix string
	// lastRev is the newest revision seen in a response, what Revision reports when etcd
	// cannot be asked.
	lastRev atomic.Int64

	closeOnce sync.Once
	closeErr  error
}

var _ Interface = (*Etcd)(nil)

// OpenEtcd connects to the etcd cluster at endpoints (host:port or URLs) and checks that it
// answers. Every key is stored under prefix. With tlsConfig the connections are TLS (its
// RootCAs verify the members, its certificate authenticates us); nil is plain TCP.
func OpenEtcd(endpoints []string, prefix string, tlsConfig *tls.Config) (*Etcd, error) {
	client, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		TLS:                  tlsConfig,
		DialTimeout:          etcdTimeout,
		DialKeepAliveTime:    etcdKeepAliveTime,
		DialKeepAliveTimeout: etcdKeepAliveTimeout,
		// The client's retry chatter is not ours to log; failures come back as errors.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd at %s: %w", strings.Join(endpoints, ","), err)
	}
	s := &Etcd{client: client, endpoints: endpoints, prefix: prefix}
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	if _, err := s.currentRevision(ctx); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("etcd at %s is not reachable: %w", strings.Join(endpoints, ","), err)
	}
	return s, nil
}

func (s *Etcd) seen(h interface{ GetRevision() int64 }) int64 {
	rev := h.GetRevision()
	for {
		old := s.lastRev.Load()
		if rev <= old || s.lastRev.CompareAndSwap(old, rev) {
			return rev
		}
	}
}

// probeKey is a key that reads ask for only for the revision in the response header: one
// key, so the read stays cheap, and never empty (etcd refuses an empty key), whatever the
// prefix is.
func (s *Etcd) probeKey() string { return s.prefix + "/" }

func (s *Etcd) currentRevision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, s.probeKey(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return s.seen(resp.Header), nil
}

// Revision asks etcd for its revision; when etcd does not answer it returns the newest
// revision seen so far.
func (s *Etcd) Revision() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	if rev, err := s.currentRevision(ctx); err == nil {
		return rev
	}
	return s.lastRev.Load()
}

func (s *Etcd) Get(ctx context.Context, key string) (KV, error) {
	resp, err := s.client.Get(ctx, s.prefix+key)
	if err != nil {
		return KV{}, fmt.Errorf("get %q from etcd: %w", key, err)
	}
	s.seen(resp.Header)
	if len(resp.Kvs) == 0 {
		return KV{}, fmt.Errorf("get %q: %w", key, ErrNotFound)
	}
	return KV{Key: key, Value: resp.Kvs[0].Value, Revision: resp.Kvs[0].ModRevision}, nil
}

func (s *Etcd) List(ctx context.Context, prefix string) ([]KV, int64, error) {
	return s.ListAt(ctx, prefix, 0, false)
}

// ListAt reads etcd's own history for an exact revision, as kube-apiserver does.
func (s *Etcd) ListAt(ctx context.Context, prefix string, rev int64, exact bool) ([]KV, int64, error) {
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if exact && rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := s.client.Get(ctx, s.prefix+prefix, opts...)
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return nil, 0, fmt.Errorf("list %q at revision %d: %w", prefix, rev, ErrCompacted)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return nil, 0, fmt.Errorf("list %q at revision %d: %w", prefix, rev, ErrFutureRevision)
	case err != nil:
		return nil, 0, fmt.Errorf("list %q from etcd: %w", prefix, err)
	}
	current := s.seen(resp.Header)
	if current < rev {
		return nil, 0, fmt.Errorf("list %q at revision %d (etcd is at %d): %w", prefix, rev, current, ErrFutureRevision)
	}
	kvs := make([]KV, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		kvs = append(kvs, KV{Key: strings.TrimPrefix(string(kv.Key), s.prefix), Value: kv.Value, Revision: kv.ModRevision})
	}
	if exact && rev > 0 {
		return kvs, rev, nil
	}
	return kvs, current, nil
}

func (s *Etcd) Create(ctx context.Context, key string, value []byte) (int64, error) {
	k := s.prefix + key
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(value))).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("create %q in etcd: %w", key, err)
	}
	rev := s.seen(resp.Header)
	if !resp.Succeeded {
		return 0, fmt.Errorf("create %q: %w", key, ErrExists)
	}
	return rev, nil
}

// Update: an absent key has ModRevision 0, so the CreateRevision compare keeps an update
// with expectedRevision 0 from creating it.
func (s *Etcd) Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error) {
	k := s.prefix + key
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(k), "=", expectedRevision), clientv3.Compare(clientv3.CreateRevision(k), ">", 0)).
		Then(clientv3.OpPut(k, string(value))).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("update %q in etcd: %w", key, err)
	}
	rev := s.seen(resp.Header)
	if !resp.Succeeded {
		return 0, refused("update", key, expectedRevision, resp)
	}
	return rev, nil
}

func (s *Etcd) Delete(ctx context.Context, key string, expectedRevision int64) (KV, int64, error) {
	k := s.prefix + key
	cmp := clientv3.Compare(clientv3.ModRevision(k), "=", expectedRevision)
	if expectedRevision == 0 {
		cmp = clientv3.Compare(clientv3.CreateRevision(k), ">", 0)
	}
	resp, err := s.client.Txn(ctx).
		If(cmp).
		Then(clientv3.OpDelete(k, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return KV{}, 0, fmt.Errorf("delete %q in etcd: %w", key, err)
	}
	rev := s.seen(resp.Header)
	if !resp.Succeeded {
		return KV{}, 0, refused("delete", key, expectedRevision, resp)
	}
	prev := resp.Responses[0].GetResponseDeleteRange().GetPrevKvs()
	if len(prev) == 0 { // the compare held, so etcd deleted the key: only a broken server gets here
		return KV{}, 0, fmt.Errorf("delete %q: etcd returned no previous value", key)
	}
	return KV{Key: key, Value: prev[0].Value, Revision: prev[0].ModRevision}, rev, nil
}

// refused tells, from the Else branch's Get, why a compare-and-swap failed.
func refused(op, key string, expected int64, resp *clientv3.TxnResponse) error {
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return fmt.Errorf("%s %q: %w", op, key, ErrNotFound)
	}
	return fmt.Errorf("%s %q: expected revision %d, current is %d: %w", op, key, expected, kvs[0].ModRevision, ErrConflict)
}

// Compact drops etcd's history before rev: watches from older revisions fail with ErrCompacted.
func (s *Etcd) Compact(ctx context.Context, rev int64) error {
	_, err := s.client.Compact(ctx, rev, clientv3.WithCompactPhysical())
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil // already compacted at or beyond rev
	}
	if err != nil {
		return fmt.Errorf("compact etcd to revision %d: %w", rev, err)
	}
	return nil
}

func (s *Etcd) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan Event, error) {
	if fromRevision < 0 {
		return nil, fmt.Errorf("watch %q from revision %d: revision must not be negative", prefix, fromRevision)
	}
	// etcd creates a watch asynchronously: pin "now" to a revision so that no write
	// acknowledged after Watch returns is missed. For an older revision, a read at it tells
	// whether it was compacted, which the watch itself would only report later.
	if fromRevision == 0 {
		rev, err := s.currentRevision(ctx)
		if err != nil {
			return nil, fmt.Errorf("watch %q: read etcd revision: %w", prefix, err)
		}
		fromRevision = rev
	} else {
		_, err := s.client.Get(ctx, s.probeKey(), clientv3.WithCountOnly(), clientv3.WithRev(fromRevision+1))
		switch {
		case errors.Is(err, rpctypes.ErrCompacted):
			return nil, fmt.Errorf("watch %q from revision %d: %w", prefix, fromRevision, ErrCompacted)
		case err != nil && !errors.Is(err, rpctypes.ErrFutureRev):
			return nil, fmt.Errorf("watch %q from revision %d in etcd: %w", prefix, fromRevision, err)
		}
	}
	watchCtx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	responses := s.client.Watch(watchCtx, s.prefix+prefix,
		clientv3.WithPrefix(), clientv3.WithRev(fromRevision+1), clientv3.WithPrevKV())
	out := make(chan Event, 64)
	go func() {
		defer close(out)
		defer cancel()
		for resp := range responses {
			if err := resp.Err(); err != nil {
				// Compaction, a lost leader or cancellation: the caller re-watches.
				slog.Debug("store: etcd watch ended", "prefix", prefix, "err", err)
				return
			}
			for _, ev := range resp.Events {
				select {
				case out <- s.event(ev):
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

func (s *Etcd) event(ev *clientv3.Event) Event {
	out := Event{Key: strings.TrimPrefix(string(ev.Kv.Key), s.prefix), Revision: ev.Kv.ModRevision}
	var prev []byte
	if ev.PrevKv != nil {
		prev = ev.PrevKv.Value
	}
	switch {
	case ev.Type == mvccpb.DELETE:
		out.Type, out.Value, out.PrevValue = Deleted, prev, prev
	case ev.IsCreate():
		out.Type, out.Value = Added, ev.Kv.Value
	default:
		out.Type, out.Value, out.PrevValue = Modified, ev.Kv.Value, prev
	}
	return out
}

func (s *Etcd) Close() error {
	s.closeOnce.Do(func() {
		if err := s.client.Close(); err != nil {
			s.closeErr = fmt.Errorf("close etcd client for %s: %w", strings.Join(s.endpoints, ","), err)
		}
	})
	return s.closeErr
}
