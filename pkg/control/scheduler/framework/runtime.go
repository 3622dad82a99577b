package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// WeightedScore is a score plugin with its profile weight.
type WeightedScore struct {
	ScorePlugin
	Weight int64
}

// Framework is one profile: the plugins enabled at each extension point, in order.
type Framework struct {
	ProfileName string
	PreFilters  []PreFilterPlugin
	Filters     []FilterPlugin
	PostFilters []PostFilterPlugin
	PreScores   []PreScorePlugin
	Scores      []WeightedScore
	Reserves    []ReservePlugin
	PreBinds    []PreBindPlugin
	Binds       []BindPlugin
	// PercentageOfNodesToScore: 0 is kube-scheduler's adaptive default.
	PercentageOfNodesToScore int32
	// Parallelism is how many goroutines filter and score nodes.
	Parallelism int
}

// RunPreFilter runs every PreFilter plugin; the first rejection stops the cycle.
func (f *Framework) RunPreFilter(ctx context.Context, state *CycleState, pod *PodInfo, nodes NodeLister) *Status {
	for _, p := range f.PreFilters {
		s := p.PreFilter(ctx, state, pod, nodes)
		if s.IsSkip() {
			state.SkipFilter[p.Name()] = true
			continue
		}
		if !s.IsSuccess() {
			return s.WithPlugin(p.Name())
		}
	}
	state.filters = make([]FilterPlugin, 0, len(f.Filters))
	for _, p := range f.Filters {
		if !state.SkipFilter[p.Name()] {
			state.filters = append(state.filters, p)
		}
	}
	return nil
}

// RunFilter runs the Filter plugins on one node and returns the first rejection.
// RunPreFilter must have run in state.
func (f *Framework) RunFilter(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	for _, p := range state.filters {
		if s := p.Filter(ctx, state, pod, node); !s.IsSuccess() {
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunFilters runs PreFilter and then Filter for pod on node in a cycle of its own, against
// nodes: what a Handle's RunFilters answers (preemption's what-if).
func (f *Framework) RunFilters(ctx context.Context, pod *PodInfo, nodes NodeLister, node *NodeInfo) *Status {
	state := NewCycleState()
	if s := f.RunPreFilter(ctx, state, pod, nodes); !s.IsSuccess() {
		return s
	}
	return f.RunFilter(ctx, state, pod, node)
}

// RunPostFilter runs PostFilter plugins until one nominates a node.
func (f *Framework) RunPostFilter(ctx context.Context, state *CycleState, pod *PodInfo, statuses NodeStatuses) (string, *Status) {
	var last *Status
	for _, p := range f.PostFilters {
		nominated, s := p.PostFilter(ctx, state, pod, statuses)
		if s.IsSuccess() {
			return nominated, nil
		}
		if s.Code() == Error {
			return "", s.WithPlugin(p.Name())
		}
		last = s.WithPlugin(p.Name())
	}
	if last == nil {
		last = NewStatus(Unschedulable)
	}
	return "", last
}

// RunScore runs PreScore and Score over the feasible nodes and returns each node's
// weighted sum of normalized scores.
func (f *Framework) RunScore(ctx context.Context, state *CycleState, pod *PodInfo, nodes []*NodeInfo) ([]NodeScore, *Status) {
	for _, p := range f.PreScores {
		s := p.PreScore(ctx, state, pod, nodes)
		if s.IsSkip() {
			state.SkipScore[p.Name()] = true
			continue
		}
		if !s.IsSuccess() {
			return nil, s.WithPlugin(p.Name())
		}
	}
	totals := make([]NodeScore, len(nodes))
	for i, n := range nodes {
		totals[i].Name = n.Name
	}
	var active []WeightedScore
	for _, p := range f.Scores {
		if !state.SkipScore[p.Name()] {
			active = append(active, p)
		}
	}
	// One pass over the nodes for every plugin: one wait per cycle, not one per plugin.
	buf := scoreBuffer(len(active) * len(nodes))
	defer scoreBuffers.Put(buf)
	scores := make([][]NodeScore, len(active))
	for j := range active {
		scores[j] = (*buf)[j*len(nodes) : (j+1)*len(nodes)]
	}
	var failed atomic.Pointer[Status]
	f.Parallelize(ctx, len(nodes), func(i int) bool {
		for j, p := range active {
			sc, s := p.Score(ctx, state, pod, nodes[i])
			if !s.IsSuccess() {
				failed.Store(s.WithPlugin(p.Name()))
				return false
			}
			scores[j][i] = NodeScore{Name: totals[i].Name, Score: sc}
		}
		return true
	})
	if s := failed.Load(); s != nil {
		return nil, s
	}
	for j, p := range active {
		if n, ok := p.ScorePlugin.(ScoreNormalizer); ok {
			if s := n.NormalizeScore(ctx, state, pod, scores[j]); !s.IsSuccess() {
				return nil, s.WithPlugin(p.Name())
			}
		}
		for i, sc := range scores[j] {
			if sc.Score < 0 || sc.Score > MaxNodeScore {
				return nil, AsStatus(fmt.Errorf("plugin %s scored node %s %d, outside 0..%d", p.Name(), sc.Name, sc.Score, MaxNodeScore))
			}
			totals[i].Score += sc.Score * p.Weight
		}
	}
	return totals, nil
}

// scoreBuffers keep the per-plugin scores of a cycle for the next one: at 5000 nodes
// each cycle scores 500 nodes with half a dozen plugins, and that was most of its garbage.
var scoreBuffers sync.Pool // *[]NodeScore

func scoreBuffer(n int) *[]NodeScore {
	buf, _ := scoreBuffers.Get().(*[]NodeScore)
	if buf == nil || cap(*buf) < n {
		b := make([]NodeScore, n)
		return &b
	}
	*buf = (*buf)[:n]
	return buf
}

// RunReserve reserves in order; on failure the ones before are unreserved.
func (f *Framework) RunReserve(ctx context.Context, state *CycleState, pod *PodInfo, node string) *Status {
	for i, p := range f.Reserves {
		if s := p.Reserve(ctx, state, pod, node); !s.IsSuccess() {
			for j := i - 1; j >= 0; j-- {
				f.Reserves[j].Unreserve(ctx, state, pod, node)
			}
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunUnreserve undoes every Reserve, in reverse order.
func (f *Framework) RunUnreserve(ctx context.Context, state *CycleState, pod *PodInfo, node string) {
	for i := len(f.Reserves) - 1; i >= 0; i-- {
		f.Reserves[i].Unreserve(ctx, state, pod, node)
	}
}

// RunPreBind runs every PreBind plugin (in the binding goroutine); the first failure
// fails the binding.
func (f *Framework) RunPreBind(ctx context.Context, state *CycleState, pod *PodInfo, node string) *Status {
	for _, p := range f.PreBinds {
		if s := p.PreBind(ctx, state, pod, node); !s.IsSuccess() && !s.IsSkip() {
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunBind asks the bind plugins in order until one binds (Skip passes to the next).
func (f *Framework) RunBind(ctx context.Context, state *CycleState, pod *PodInfo, node string) *Status {
	for _, p := range f.Binds {
		s := p.Bind(ctx, state, pod.Pod, node)
		if s.IsSkip() {
			continue
		}
		return s.WithPlugin(p.Name())
	}
	return AsStatus(fmt.Errorf("no bind plugin bound pod %s/%s", pod.Pod.Namespace, pod.Pod.Name))
}

// Parallelize calls do(0..n-1) in chunks from the calling goroutine and up to
// Parallelism-1 helpers; do returning false stops the remaining work. The caller waits for
// the chunks, not for the helpers: on a busy machine a helper the OS has not run yet finds
// nothing left and is not waited for.
func (f *Framework) Parallelize(ctx context.Context, n int, do func(i int) bool) {
	const chunk = 32
	workers := min(f.Parallelism, (n+chunk-1)/chunk)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			if !do(i) {
				return
			}
		}
		return
	}
	chunks := int64((n + chunk - 1) / chunk)
	var next, finished atomic.Int64
	var stop atomic.Bool
	done := make(chan struct{})
	work := func() {
		for {
			c := next.Add(1) - 1
			if c >= chunks {
				return
			}
			for i := int(c) * chunk; i < min(int(c+1)*chunk, n) && !stop.Load() && ctx.Err() == nil; i++ {
				if !do(i) {
					stop.Store(true)
				}
			}
			if finished.Add(1) == chunks {
				close(done)
			}
		}
	}
	for range workers - 1 {
		go work()
	}
	work()
	<-done
}

// Constants of kube-scheduler's adaptive percentage of nodes to score.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
	basePercentageOfNodesToScore     = 50
)

// NumFeasibleNodesToFind is how many fitting nodes a cycle looks for before it stops
// filtering: all of a small cluster, and for a large one a share that shrinks with its size
// (50% - 1% per 125 nodes, at least 5% and 100 nodes), as kube-scheduler does.
func (f *Framework) NumFeasibleNodesToFind(all int) int {
	pct := f.PercentageOfNodesToScore
	if all < minFeasibleNodesToFind || pct >= 100 {
		return all
	}
	if pct <= 0 {
		pct = int32(basePercentageOfNodesToScore - all/125)
		if pct < minFeasibleNodesPercentageToFind {
			pct = minFeasibleNodesPercentageToFind
		}
	}
	n := all * int(pct) / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

// Diagnosis records why a pod fits nowhere.
type Diagnosis struct {
	NodeStatuses NodeStatuses
	// UnschedulablePlugins rejected the pod; the queue retries it on their events.
	UnschedulablePlugins map[string]bool
	PreFilterMsg         string
	PostFilterMsg        string
}

// FitError is "no node fits", worded as kube-scheduler's.
type FitError struct {
	NumAllNodes int
	Diagnosis   Diagnosis
}

// Error reads like "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated
// taint {dedicated: gpu}. preemption: 0/3 nodes are available: 3 Preemption is not helpful
// for scheduling."
func (e *FitError) Error() string {
	msg := fmt.Sprintf("0/%d nodes are available:", e.NumAllNodes)
	if e.Diagnosis.PreFilterMsg != "" {
		msg += " " + e.Diagnosis.PreFilterMsg + "."
	} else if h := ReasonHistogram(e.Diagnosis.NodeStatuses); h != "" {
		msg += " " + h + "."
	}
	if e.Diagnosis.PostFilterMsg != "" {
		msg += " " + e.Diagnosis.PostFilterMsg
	}
	return msg
}

// ReasonHistogram counts nodes per reason: "1 Insufficient cpu, 2 Too many pods".
func ReasonHistogram(statuses NodeStatuses) string {
	counts := map[string]int{}
	for _, s := range statuses {
		for _, r := range s.Reasons() {
			counts[r]++
		}
	}
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
