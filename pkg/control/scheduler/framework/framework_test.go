package framework

import (
	"context"
	"sync/atomic"
	"testing"
)

func TestFitErrorMessage(t *testing.T) {
	e := &FitError{NumAllNodes: 3, Diagnosis: Diagnosis{NodeStatuses: NodeStatuses{
		"a": NewStatus(Unschedulable, "Insufficient cpu"),
		"b": NewStatus(UnschedulableAndUnresolvable, "node(s) had untolerated taint {dedicated: gpu}"),
		"c": NewStatus(UnschedulableAndUnresolvable, "node(s) had untolerated taint {dedicated: gpu}"),
	}, PostFilterMsg: "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."}}
	want := "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
	if e.Error() != want {
		t.Errorf("got  %q\nwant %q", e.Error(), want)
	}
	pre := &FitError{NumAllNodes: 2, Diagnosis: Diagnosis{PreFilterMsg: "pod has unbound immediate PersistentVolumeClaims"}}
	if got := pre.Error(); got != "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims." {
		t.Errorf("prefilter: %q", got)
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	f := &Framework{}
	for _, tc := range []struct{ all, want int }{{50, 50}, {500, 230}, {5000, 500}, {100000, 5000}} {
		if got := f.NumFeasibleNodesToFind(tc.all); got != tc.want {
			t.Errorf("%d nodes: %d, want %d", tc.all, got, tc.want)
		}
	}
	f.PercentageOfNodesToScore = 100
	if got := f.NumFeasibleNodesToFind(5000); got != 5000 {
		t.Errorf("100%%: %d", got)
	}
}

func TestParallelize(t *testing.T) {
	f := &Framework{Parallelism: 4}
	seen := make([]atomic.Int32, 1000)
	f.Parallelize(context.Background(), len(seen), func(i int) bool { seen[i].Add(1); return true })
	for i := range seen {
		if seen[i].Load() != 1 {
			t.Fatalf("index %d done %d times", i, seen[i].Load())
		}
	}
	var calls atomic.Int32
	f.Parallelize(context.Background(), 1000, func(i int) bool { calls.Add(1); return i != 10 })
	if calls.Load() >= 1000 {
		t.Errorf("stop ignored: %d calls", calls.Load())
	}
}
