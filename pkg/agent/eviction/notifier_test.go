package eviction

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/agent/cm"
)

// The kernel wakes a notifier registered on a real memory cgroup when the cgroup's usage
// crosses the threshold, and not before.
func TestUsageNotifierOnARealCgroup(t *testing.T) {
	cgroup, before := memoryCgroup(t)
	n, err := notifyUsage(cgroup, before+16<<20)
	if err != nil {
		t.Fatal(err)
	}
	woke := make(chan error, 1)
	go func() { woke <- n.Wait() }()
	select {
	case err := <-woke:
		t.Fatalf("woken before usage grew: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	fillMemory(t, cgroup)
	select {
	case err := <-woke:
		if err != nil {
			t.Errorf("Wait: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification after usage crossed the threshold")
	}
	// Closed, a notifier's Wait ends.
	go func() { woke <- n.Wait() }()
	n.Close()
	select {
	case err := <-woke:
		if err == nil {
			t.Error("Wait on a closed notifier returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end Wait")
	}
}

// memoryCgroup makes a real memory cgroup and returns it with its usage.
func memoryCgroup(t *testing.T) (string, int64) {
	t.Helper()
	testenv.RequireRoot(t, "makes a memory cgroup and registers a usage threshold on it")
	if _, err := os.Stat(filepath.Join(memoryCgroupV1, "cgroup.event_control")); err != nil {
		t.Skip("no cgroup v1 memory controller: the notifier is not used (as the kubelet's)")
	}
	cgroup := fmt.Sprintf("/minik8s-memnotify-%d-%s", os.Getpid(), strings.ToLower(t.Name()))
	if err := cm.SetMemoryLimit(cgroup, 512<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cm.RemoveRoot(cgroup); err != nil {
			t.Error(err)
		}
	})
	raw, err := os.ReadFile(filepath.Join(memoryCgroupV1, cgroup, "memory.usage_in_bytes"))
	if err != nil {
		t.Fatal(err)
	}
	usage, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return cgroup, usage
}

// fillMemory has a process of cgroup fill 32Mi of page cache, charged to the cgroup.
func fillMemory(t *testing.T, cgroup string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "fill")
	script := fmt.Sprintf("echo $$ > %s && exec dd if=/dev/zero of=%s bs=1M count=32 status=none",
		filepath.Join(memoryCgroupV1, cgroup, "cgroup.procs"), file)
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("fill the cgroup's memory: %v: %s", err, out)
	}
}

// The manager arms a notifier at the usage where memory.available reaches its threshold
// and, woken by the kernel, takes a fresh sample and looks at once, before its next tick.
func TestManagerWokenByMemoryThreshold(t *testing.T) {
	cgroup, before := memoryCgroup(t)
	// A sample that puts the 100Mi threshold 16Mi above the cgroup's usage now.
	capacity, workingSet := before+16*mi+100*mi, before
	summary := statsapi.Summary{Node: nodeMemory((capacity-workingSet)/mi, workingSet/mi, time.Now())}
	summary.Node.Memory.UsageBytes = summary.Node.Memory.WorkingSetBytes
	tm := newTestManager(t, "memory.available<100Mi", nil, summary, false)
	tm.cfg.MemoryCgroup = cgroup
	sampled := make(chan struct{}, 1)
	tm.stats.onSample = func() {
		select {
		case sampled <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { tm.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitTicker(t, tm.clock)
	tm.clock.Step(monitoringInterval) // the first look arms the notifier
	time.Sleep(300 * time.Millisecond)
	select {
	case <-sampled:
		t.Fatal("sampled before usage grew")
	default:
	}
	fillMemory(t, cgroup)
	select {
	case <-sampled:
	case <-time.After(5 * time.Second):
		t.Fatal("the manager was not woken by the crossing")
	}
}

// waitTicker waits until Run has made its ticker on clk.
func waitTicker(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	for range 500 {
		if clk.HasWaiters() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("Run made no ticker")
}
