package controlplane

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"testing"
)

// TestStoreKeepsEachVersionOnce: the watch cache keeps the recent versions for resuming
// watches (its ring, here 10 events); bolt under it must not keep each update's previous
// value a second time.
func TestStoreKeepsEachVersionOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := openStore(ctx, Options{DataDir: t.TempDir(), Store: "bolt", WatchHistory: 10}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	const updates, size = 2000, 16 << 10
	value := func(i int) []byte {
		b := bytes.Repeat([]byte{'x'}, size)
		copy(b, strconv.Itoa(i))
		return b
	}
	liveHeap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const key = "/registry/configmaps/default/c"
	rev, err := st.Create(ctx, key, value(0))
	if err != nil {
		t.Fatal(err)
	}
	before := liveHeap()
	for i := 1; i <= updates; i++ {
		if rev, err = st.Update(ctx, key, value(i), rev); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.List(ctx, key); err != nil { // waits until the cache has every update
		t.Fatal(err)
	}
	// Signed: other tests' servers may still be letting memory go.
	grown := int64(liveHeap()) - int64(before)
	versions := int64(updates * size)
	t.Logf("live heap grew %d KiB over %d updates of %d KiB", grown>>10, updates, size>>10)
	if grown > versions/4 {
		t.Errorf("live heap grew %d KiB over %d updates of %d KiB, with 10 events kept: old versions are kept", grown>>10, updates, size>>10)
	}
}
