// Package netnstest gives a test a network namespace of its own, so what it does to links,
// routes, iptables, ipsets or conntrack stays out of the host's.
package netnstest

import (
	"runtime"
	"testing"

	"github.com/vishvananda/netns"
)

// Enter locks the test's goroutine to its thread and moves that thread into a new network
// namespace until the test ends; programs the test runs inherit it. The caller must be root
// and must not hand the work to other goroutines. Should the way back fail, the thread stays
// locked and dies with the test rather than serving others in the wrong namespace.
func Enter(t testing.TB) {
	t.Helper()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("current network namespace: %v", err)
	}
	ns, err := netns.New()
	if err != nil {
		orig.Close()
		runtime.UnlockOSThread()
		t.Fatalf("new network namespace: %v", err)
	}
	t.Cleanup(func() {
		defer orig.Close()
		ns.Close()
		if err := netns.Set(orig); err != nil {
			t.Errorf("back to the original network namespace: %v", err)
			return
		}
		runtime.UnlockOSThread()
	})
}
