package encryption

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/store/storetest"
)

func load(t testing.TB, resources, providers string) Transformers {
	t.Helper()
	path := filepath.Join(t.TempDir(), "enc.yaml")
	cfg := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: " + resources + "\n  providers:\n" + providers
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

var key32 = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))

// Keys map to the resources the configuration names: exact, GROUP.*, *.*.
func TestForKey(t *testing.T) {
	tr := load(t, "[secrets, '*.apps']", "  - aesgcm:\n      keys:\n      - {name: k, secret: "+key32+"}\n")
	for key, want := range map[string]bool{
		"/registry/core/secrets/ns/a":        true,
		"/registry/core/configmaps/ns/a":     false,
		"/registry/apps/deployments/ns/a":    true,
		"/registry/batch/jobs/ns/a":          false,
		"/registry/ranges/serviceips/10.0.0": false,
		"/other":                             false,
	} {
		if got := tr.forKey(key) != nil; got != want {
			t.Errorf("%s: encrypted %v, want %v", key, got, want)
		}
	}
	all := load(t, "['*.*']", "  - secretbox:\n      keys:\n      - {name: k, secret: "+key32+"}\n")
	if all.forKey("/registry/batch/jobs/ns/a") == nil {
		t.Error("*.* does not cover batch/jobs")
	}
}

// Writes are ciphertext in the engine; reads, lists, deletes and watch events (value and
// previous value) are plaintext; a value of a key that no longer writes is stale.
func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	engine := storetest.Bolt(t)
	old := load(t, "[secrets]", "  - aescbc:\n      keys:\n      - {name: old, secret: "+key32+"}\n")
	s := Wrap(engine, old, slog.New(slog.DiscardHandler))
	const key = "/registry/core/secrets/ns/a"
	events, err := s.Watch(ctx, "/registry/", 0)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.Create(ctx, key, []byte(`{"v":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, key, []byte(`{"v":2}`), rev); err != nil {
		t.Fatal(err)
	}
	raw, _ := engine.Get(ctx, key)
	if !bytes.HasPrefix(raw.Value, []byte("k8s:enc:aescbc:v1:old:")) || bytes.Contains(raw.Value, []byte(`"v"`)) {
		t.Fatalf("engine holds %q", raw.Value)
	}
	if kv, err := s.Get(ctx, key); err != nil || string(kv.Value) != `{"v":2}` || kv.Stale {
		t.Fatalf("get: %v %q stale=%v", err, kv.Value, kv.Stale)
	}
	for i, want := range []struct{ value, prev string }{{`{"v":1}`, ""}, {`{"v":2}`, `{"v":1}`}} {
		select {
		case ev := <-events:
			if string(ev.Value) != want.value || string(ev.PrevValue) != want.prev {
				t.Fatalf("event %d: %q (prev %q), want %q (prev %q)", i, ev.Value, ev.PrevValue, want.value, want.prev)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no event %d", i)
		}
	}

	rotated := load(t, "[secrets]", "  - aescbc:\n      keys:\n      - {name: new, secret: "+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))+"}\n      - {name: old, secret: "+key32+"}\n")
	s = Wrap(engine, rotated, slog.New(slog.DiscardHandler))
	kvs, _, err := s.List(ctx, "/registry/core/secrets/")
	if err != nil || len(kvs) != 1 || string(kvs[0].Value) != `{"v":2}` || !kvs[0].Stale {
		t.Fatalf("list after rotation: %v %+v", err, kvs)
	}
	if kv, _, err := s.Delete(ctx, key, 0); err != nil || string(kv.Value) != `{"v":2}` {
		t.Fatalf("delete: %v %q", err, kv.Value)
	}
}

// BenchmarkProviders: what encrypting (a write) and decrypting (a read into the watch
// cache) a 1 KiB secret costs per provider, beside "none" (resource not configured: the
// value passes through), to set against a create's whole cost (docs/performance.md).
func BenchmarkProviders(b *testing.B) {
	ctx := context.Background()
	value := bytes.Repeat([]byte("x"), 1024)
	const key = "/registry/core/secrets/ns/a"
	for _, p := range []struct{ name, providers string }{
		{"none", "  - identity: {}\n"},
		{"aescbc", "  - aescbc:\n      keys:\n      - {name: k, secret: " + key32 + "}\n"},
		{"aesgcm", "  - aesgcm:\n      keys:\n      - {name: k, secret: " + key32 + "}\n"},
		{"secretbox", "  - secretbox:\n      keys:\n      - {name: k, secret: " + key32 + "}\n"},
	} {
		tr := load(b, "[secrets]", p.providers)
		if p.name == "none" {
			tr = Transformers{}
		}
		s := &Store{transformers: tr}
		stored, err := s.toStorage(ctx, key, value)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(p.name+"/write", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.toStorage(ctx, key, value); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(p.name+"/read", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := s.fromStorage(ctx, key, stored); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
