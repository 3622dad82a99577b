package netnstest

import (
	"runtime"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/vishvananda/netns"
)

// TestEnterAndLeave: after Enter the test's thread is in a new namespace; once the test
// ends (Enter's cleanup ran) its goroutine is in the host's again.
func TestEnterAndLeave(t *testing.T) {
	testenv.RequireRoot(t, "creates a network namespace")
	host, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	t.Run("inside", func(t *testing.T) {
		t.Cleanup(func() { // registered first, so it runs after Enter's own
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			after, err := netns.Get()
			if err != nil {
				t.Fatal(err)
			}
			defer after.Close()
			if !after.Equal(host) {
				t.Error("after the test, its goroutine is not in the host's network namespace")
			}
		})
		Enter(t)
		inside, err := netns.Get()
		if err != nil {
			t.Fatal(err)
		}
		defer inside.Close()
		if inside.Equal(host) {
			t.Error("Enter left the thread in the host's network namespace")
		}
	})
}
