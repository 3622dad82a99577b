package runtime_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// TestListKeepsATaskWhoseShimDoesNotAnswer: containerd reports a task whose shim did not
// answer in time (a loaded host) with status UNKNOWN; the listing must not report that
// container as having lost its task (minilet would start the pod over) but fail, to be
// tried again.
func TestListKeepsATaskWhoseShimDoesNotAnswer(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	podNS := newNetNS(t)
	sandbox, err := e.rt.RunSandbox(ctx, runtime.SandboxConfig{PodUID: randomHex(16), PodName: "stalled", NetNSPath: podNS.path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.rt.RemoveContainer(ctx, sandbox.ID) })
	shims := shimsOf(t, e.ns, []string{sandbox.ID})
	if len(shims) != 1 {
		t.Fatalf("shims serving sandbox %s: %v, want one", sandbox.ID, shims)
	}
	shim := shims[0]
	if err := syscall.Kill(shim, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			syscall.Kill(shim, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)

	listCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	list, err := e.rt.ListContainers(listCtx, "")
	cancel()
	for _, c := range list {
		if c.ID == sandbox.ID && c.State != runtime.StateRunning {
			t.Fatalf("with its shim stopped, the running sandbox was listed as %q (err %v)", c.State, err)
		}
	}
	if err == nil {
		t.Fatal("listing with a shim that cannot answer succeeded")
	}
	resume()
	list, err = e.rt.ListContainers(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if c.ID == sandbox.ID && c.State != runtime.StateRunning {
			t.Fatalf("after the shim resumed: %q", c.State)
		}
	}
}
