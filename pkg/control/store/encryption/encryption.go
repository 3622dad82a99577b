// Package encryption encrypts stored values at rest as kube-apiserver does
// (--encryption-provider-config): an apiserver.config.k8s.io/v1 EncryptionConfiguration,
// loaded and turned into value transformers by k8s.io/apiserver, applied between the watch
// cache and the engine, so bbolt and etcd hold k8s:enc:<provider>:v1:<key>: ciphertext while
// everything above the engine (the watch cache, the API) sees plaintext.
package encryption

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"
)

// Transformers are the transformers of the resources a configuration names, by resource;
// "*" stands for every resource of a group, "*.*" for every resource.
type Transformers map[schema.GroupResource]value.Transformer

// Load reads and validates an EncryptionConfiguration file with k8s.io/apiserver's loader.
// KMS providers are refused: miniapi runs no KMS plugin.
func Load(ctx context.Context, path string) (Transformers, error) {
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, "")
	if err != nil {
		return nil, fmt.Errorf("--encryption-provider-config %s: %w", path, err)
	}
	if len(cfg.HealthChecks) > 0 {
		return nil, fmt.Errorf("--encryption-provider-config %s: kms providers are not supported; use aescbc, aesgcm, secretbox or identity", path)
	}
	return Transformers(cfg.Transformers), nil
}

// forKey is the transformer of the resource a store key belongs to
// (/registry/GROUP/RESOURCE/..., GROUP "core" for the legacy group), nil when the
// configuration does not name it: its values are stored as they are.
func (t Transformers) forKey(key string) value.Transformer {
	rest, ok := strings.CutPrefix(key, "/registry/")
	if !ok {
		return nil
	}
	group, rest, _ := strings.Cut(rest, "/")
	resource, _, _ := strings.Cut(rest, "/")
	if group == "core" {
		group = ""
	}
	for _, gr := range []schema.GroupResource{{Group: group, Resource: resource}, {Group: group, Resource: "*"}, {Group: "*", Resource: "*"}} {
		if tr := t[gr]; tr != nil {
			return tr
		}
	}
	return nil
}

// Store is an engine whose values of the configured resources are encrypted. The key is
// the authenticated data of the providers that take some (aesgcm), as in kube-apiserver.
type Store struct {
	store.Interface
	transformers Transformers
	log          *slog.Logger
}

// Wrap encrypts engine's values as transformers say.
func Wrap(engine store.Interface, transformers Transformers, log *slog.Logger) *Store {
	return &Store{Interface: engine, transformers: transformers, log: log}
}

func (s *Store) toStorage(ctx context.Context, key string, v []byte) ([]byte, error) {
	tr := s.transformers.forKey(key)
	if tr == nil {
		return v, nil
	}
	out, err := tr.TransformToStorage(ctx, v, value.DefaultContext(key))
	if err != nil {
		return nil, fmt.Errorf("encrypt %s: %w", key, err)
	}
	return out, nil
}

// fromStorage decrypts; stale says the value was not written by the first provider and
// key, so rewriting it unchanged must still store it (the rotation's rewrite).
func (s *Store) fromStorage(ctx context.Context, key string, v []byte) (out []byte, stale bool, err error) {
	tr := s.transformers.forKey(key)
	if tr == nil || v == nil {
		return v, false, nil
	}
	out, stale, err = tr.TransformFromStorage(ctx, v, value.DefaultContext(key))
	if err != nil {
		return nil, false, fmt.Errorf("decrypt %s: %w", key, err)
	}
	return out, stale, nil
}

func (s *Store) Get(ctx context.Context, key string) (store.KV, error) {
	kv, err := s.Interface.Get(ctx, key)
	if err != nil {
		return kv, err
	}
	kv.Value, kv.Stale, err = s.fromStorage(ctx, key, kv.Value)
	return kv, err
}

func (s *Store) List(ctx context.Context, prefix string) ([]store.KV, int64, error) {
	return s.ListAt(ctx, prefix, 0, false)
}

func (s *Store) ListAt(ctx context.Context, prefix string, rev int64, exact bool) ([]store.KV, int64, error) {
	kvs, rev, err := s.Interface.ListAt(ctx, prefix, rev, exact)
	if err != nil {
		return nil, rev, err
	}
	for i := range kvs {
		kvs[i].Value, kvs[i].Stale = s.fromStorageOrRaw(ctx, kvs[i].Key, kvs[i].Value)
	}
	return kvs, rev, nil
}

func (s *Store) Create(ctx context.Context, key string, v []byte) (int64, error) {
	data, err := s.toStorage(ctx, key, v)
	if err != nil {
		return 0, err
	}
	return s.Interface.Create(ctx, key, data)
}

func (s *Store) Update(ctx context.Context, key string, v []byte, expectedRevision int64) (int64, error) {
	data, err := s.toStorage(ctx, key, v)
	if err != nil {
		return 0, err
	}
	return s.Interface.Update(ctx, key, data, expectedRevision)
}

func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (store.KV, int64, error) {
	kv, rev, err := s.Interface.Delete(ctx, key, expectedRevision)
	if err != nil {
		return kv, rev, err
	}
	kv.Value, kv.Stale, err = s.fromStorage(ctx, key, kv.Value)
	return kv, rev, err
}

// fromStorageOrRaw is fromStorage for lists and watches, which feed the watch cache: a value
// no provider can read (written with a key no longer configured) is logged and passed on as
// it is stored, so that object, not the whole cache, fails to decode, as one object does in
// kube-apiserver.
func (s *Store) fromStorageOrRaw(ctx context.Context, key string, v []byte) ([]byte, bool) {
	out, stale, err := s.fromStorage(ctx, key, v)
	if err != nil {
		s.log.Error("encryption at rest: cannot read a stored value with the configured providers", "err", err)
		return v, false
	}
	return out, stale
}

// Watch decrypts the engine's events.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan store.Event, error) {
	in, err := s.Interface.Watch(ctx, prefix, fromRevision)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event, cap(in))
	go func() {
		defer close(out)
		for ev := range in {
			select {
			case out <- s.decryptEvent(ctx, ev):
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func (s *Store) decryptEvent(ctx context.Context, ev store.Event) store.Event {
	sameValue := len(ev.Value) > 0 && len(ev.PrevValue) > 0 && &ev.Value[0] == &ev.PrevValue[0]
	ev.Value, ev.Stale = s.fromStorageOrRaw(ctx, ev.Key, ev.Value)
	if sameValue { // a deletion: decrypt once
		ev.PrevValue = ev.Value
	} else {
		ev.PrevValue, _ = s.fromStorageOrRaw(ctx, ev.Key, ev.PrevValue)
	}
	return ev
}

// Compact and Collectors pass on to the engine when it has them (the watch cache asks).
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if engine, ok := s.Interface.(interface {
		Compact(context.Context, int64) error
	}); ok {
		return engine.Compact(ctx, rev)
	}
	return fmt.Errorf("compact to revision %d: store engine %T cannot compact", rev, s.Interface)
}

func (s *Store) Collectors() []prometheus.Collector {
	if engine, ok := s.Interface.(interface{ Collectors() []prometheus.Collector }); ok {
		return engine.Collectors()
	}
	return nil
}
