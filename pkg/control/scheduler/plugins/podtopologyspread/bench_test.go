package podtopologyspread

import (
	"context"
	"fmt"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/cache"
	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
)

// BenchmarkScoreSystemDefaults is a Deployment's pod (the system default constraints)
// scored on controllerbench's cluster: 500 nodes in ten zones holding 3000 of its
// replicas, of which a cycle scores the 230 nodes kube-scheduler's adaptive share finds.
func BenchmarkScoreSystemDefaults(b *testing.B) {
	snap := zonedCluster(6)
	p, _ := New(schedtest.NewHandle(snap, webSet()))
	fwk := &framework.Framework{Parallelism: 1, Scores: []framework.WeightedScore{{ScorePlugin: p.(framework.ScorePlugin), Weight: 2}},
		PreScores: []framework.PreScorePlugin{p.(framework.PreScorePlugin)}}
	feasible := snap.List()[:230]
	pod := framework.NewPodInfo(schedtest.Pod("new", web, 0))
	b.ReportAllocs()
	for b.Loop() {
		if _, s := fwk.RunScore(context.Background(), framework.NewCycleState(), pod, feasible); !s.IsSuccess() {
			b.Fatal(s.Message())
		}
	}
}

// BenchmarkFilterZoneSpread is schedbench's spread pod (DoNotSchedule over ten zones,
// maxSkew 1) filtered on 500 nodes holding 1000 of its kind.
func BenchmarkFilterZoneSpread(b *testing.B) {
	snap := zonedCluster(2)
	p, _ := New(schedtest.NewHandle(snap))
	fwk := &framework.Framework{Parallelism: 1, PreFilters: []framework.PreFilterPlugin{p.(framework.PreFilterPlugin)}, Filters: []framework.FilterPlugin{p.(framework.FilterPlugin)}}
	pod := framework.NewPodInfo(spread(1, corev1.DoNotSchedule, nil))
	b.ReportAllocs()
	for b.Loop() {
		state := framework.NewCycleState()
		if s := fwk.RunPreFilter(context.Background(), state, pod, snap); !s.IsSuccess() {
			b.Fatal(s.Message())
		}
		for _, n := range snap.List() {
			fwk.RunFilter(context.Background(), state, pod, n)
		}
	}
}

// zonedCluster is 500 nodes in ten zones, each holding perNode web pods.
func zonedCluster(perNode int) *cache.Snapshot {
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range 500 {
		name := fmt.Sprintf("node-%04d", i)
		nodes = append(nodes, schedtest.Node(name, map[string]string{zone: fmt.Sprintf("zone-%d", i%10)}))
		for j := range perNode {
			pods = append(pods, schedtest.On(schedtest.Pod(fmt.Sprintf("%s-%d", name, j), web, 0), name))
		}
	}
	return schedtest.Snapshot(nodes, pods...)
}
