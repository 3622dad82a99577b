// Package storetest opens the stores the control plane's unit tests run on: a bbolt file of
// the test's own, bare or under the watch cache as miniapi's is, closed when the test ends.
package storetest

import (
	"path/filepath"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/store"
)

// Bolt is a bbolt store in a file of t's temporary directory, closed when t ends.
func Bolt(t testing.TB) *store.Bolt {
	t.Helper()
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "state.db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// Cached is a Bolt store read through the watch cache, as miniapi reads its store, closed
// (with the engine under it) when t ends.
func Cached(t testing.TB) *store.Cache {
	t.Helper()
	st, err := store.NewCache(Bolt(t), store.CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
