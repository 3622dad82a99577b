// Package podtopologyspread is kube-scheduler's PodTopologySpread plugin. Filter
// (whenUnsatisfiable: DoNotSchedule): placing the pod in a node's domain must keep
// (matching pods there + 1) - (fewest matching pods in any domain) <= maxSkew, with
// minDomains counting missing domains as empty and nodeAffinityPolicy / nodeTaintsPolicy
// deciding which nodes' domains count. Score (ScheduleAnyway): domains with fewer matching
// pods score higher.
package podtopologyspread

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Name is the plugin's name in profiles.
const Name = "PodTopologySpread"

// kube-scheduler's wording.
const (
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	ErrReasonNodeLabelNotMatch   = ErrReasonConstraintsNotMatch + " (missing required label)"
)

const (
	filterKey = Name + "/preFilter"
	scoreKey  = Name + "/preScore"
)

type constraint struct {
	memo              *memoTable // the counts of its namespace and selector (set by counter.entry)
	maxSkew           int32
	minDomains        int32
	key               string
	selector          labels.Selector
	honorNodeAffinity bool
	honorNodeTaints   bool
}

// constraints parses the pod's constraints of one whenUnsatisfiable kind; matchLabelKeys
// add the pod's own values of those keys to the selector.
func constraints(pod *corev1.Pod, kind corev1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != kind {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, err
		}
		for _, key := range c.MatchLabelKeys {
			if v, ok := pod.Labels[key]; ok {
				if r, err := labels.NewRequirement(key, "in", []string{v}); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
		pc := constraint{maxSkew: c.MaxSkew, minDomains: 1, key: c.TopologyKey, selector: sel,
			honorNodeAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
			honorNodeTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor}
		if c.MinDomains != nil {
			pc.minDomains = *c.MinDomains
		}
		out = append(out, pc)
	}
	return out, nil
}

// counts reports whether node takes part in the constraint's domains.
func (c *constraint) counts(pod *corev1.Pod, node *corev1.Node, affinity nodeaffinity.RequiredNodeAffinity) bool {
	if c.honorNodeAffinity {
		if ok, err := affinity.Match(node); err != nil || !ok {
			return false
		}
	}
	if c.honorNodeTaints {
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false); untolerated {
			return false
		}
	}
	return true
}

func hasAllKeys(node *corev1.Node, cs []constraint) bool {
	for _, c := range cs {
		if _, ok := node.Labels[c.key]; !ok {
			return false
		}
	}
	return true
}

// matching counts the node's pods in ns the selector matches (terminating ones aside).
func matching(n *framework.NodeInfo, sel labels.Selector, ns string) int64 {
	var count int64
	for _, p := range n.Pods {
		if p.Pod.Namespace == ns && !framework.IsTerminating(p.Pod) && sel.Matches(labels.Set(p.Pod.Labels)) {
			count++
		}
	}
	return count
}

type filterState struct {
	constraints []constraint
	minMatch    []int64
	self        []int64 // per constraint: 1 when it selects the incoming pod itself
	// all is the nodes PreFilter saw; domains is, per constraint, each one's domain (by
	// position in all, as numbered in Plugin.domains; -1: no such label), and counts the
	// matching pods per domain (by number; < 0: none counted). Filter reads a node's
	// verdict from these by its index, with no label or map lookup.
	all     []*framework.NodeInfo
	domains [][]int32
	counts  [][]int64
	// byValue is counts by topology value, made for the rare node Filter gets that is not
	// one of all (by its Node object).
	byValueOnce sync.Once
	byValue     []map[string]int64
}

// count is the matching pods of domain d of constraint i.
func (s *filterState) count(i int, d int32) int64 {
	if int(d) < len(s.counts[i]) && s.counts[i][d] > 0 {
		return s.counts[i][d]
	}
	return 0
}

// Plugin is the filter and score.
type Plugin struct {
	h framework.Handle
	// memo keeps each node's count of matching pods per selector, valid while the node's
	// generation is unchanged: a cycle recounts only the nodes that changed since the last
	// (typically one), not every pod of the cluster.
	memoMu   sync.Mutex
	memo     map[string]*memoTable
	domains  map[string]int32 // topology values by number
	services corelisters.ServiceLister
	rcs      corelisters.ReplicationControllerLister
	rss      appslisters.ReplicaSetLister
	sss      appslisters.StatefulSetLister
}

// New makes the plugin.
func New(h framework.Handle) (framework.Plugin, error) {
	f := h.Informers()
	return &Plugin{h: h, services: f.Core().V1().Services().Lister(), rcs: f.Core().V1().ReplicationControllers().Lister(),
		rss: f.Apps().V1().ReplicaSets().Lister(), sss: f.Apps().V1().StatefulSets().Lister()}, nil
}

// memoCount is what a cycle needs of one node for one constraint: its count of matching
// pods and its value of the topology key. Kept while the node's generation is unchanged,
// it spares each cycle a lookup in every node's labels (a cache miss per node at 500 nodes
// and more, most of this plugin's cost when every node is walked).
type memoCount struct {
	node              *framework.NodeInfo // whose entry it is (the slot's node may change)
	generation, count int64
	value             string
	// domain numbers value (in Plugin.domains), so a cycle counts pods per domain in a
	// slice.
	domain   int32
	hasValue bool
}

// memoTable is one namespace, selector and topology key's entries, indexed by the
// snapshot's NodeInfo.Index (a node keeps its NodeInfo and index across snapshot updates
// while no node comes or goes; the entry names its NodeInfo, so a slot another node took
// over is recounted).
type memoTable struct{ entries []memoCount }

// memoSelectors bounds the memo; past it, it starts afresh.
const memoSelectors = 64

// counter counts one cycle's matching pods per node through the memo. Callers lock memoMu
// around its use (once per cycle, not per node).
type counter struct {
	p *Plugin
	// snapshot: the nodes counted are the snapshot's own, every one memoizable; else
	// (preemption's what-if lister) only those that are the snapshot's.
	snapshot bool
}

func (p *Plugin) counter(nodes framework.NodeLister) *counter {
	if p.memo == nil || len(p.memo) > memoSelectors {
		p.memo, p.domains = map[string]*memoTable{}, map[string]int32{}
	}
	return &counter{p: p, snapshot: nodes == p.h.Nodes()}
}

// count is matching(n, c.selector, ns), memoized for the nodes of the current snapshot.
func (k *counter) count(n *framework.NodeInfo, c *constraint, ns string) int64 {
	return k.entry(n, c, ns).count
}

// entry is the node's memoized count and topology value for c.
func (k *counter) entry(n *framework.NodeInfo, c *constraint, ns string) memoCount {
	if !k.snapshot && k.p.h.Nodes().Get(n.Name) != n {
		return k.fresh(n, c, ns) // a what-if copy (preemption): not memoized
	}
	return *k.at(k.table(c, ns), n, c, ns)
}

// table is c's memo, a slot for every node of the snapshot.
func (k *counter) table(c *constraint, ns string) []memoCount {
	if c.memo == nil {
		key := ns + "\x00" + c.selector.String() + "\x00" + c.key
		c.memo = k.p.memo[key]
		if c.memo == nil {
			c.memo = &memoTable{}
			k.p.memo[key] = c.memo
		}
	}
	if n := len(k.p.h.Nodes().List()); len(c.memo.entries) < n {
		c.memo.entries = append(c.memo.entries, make([]memoCount, n-len(c.memo.entries))...)
	}
	return c.memo.entries
}

// at is the snapshot's node n's entry in c's table, brought up to date.
func (k *counter) at(table []memoCount, n *framework.NodeInfo, c *constraint, ns string) *memoCount {
	m := &table[n.Index]
	if m.node != n || m.generation != n.Generation {
		*m = k.fresh(n, c, ns)
		m.node = n
	}
	return m
}

func (k *counter) fresh(n *framework.NodeInfo, c *constraint, ns string) memoCount {
	m := memoCount{generation: n.Generation, count: matching(n, c.selector, ns), domain: -1}
	if v, ok := n.Node().Labels[c.key]; ok {
		d, ok := k.p.domains[v]
		if !ok {
			d = int32(len(k.p.domains))
			k.p.domains[v] = d
		}
		m.value, m.domain, m.hasValue = v, d, true
	}
	return m
}

// systemDefaults are kube-scheduler's default constraints for pods without their own:
// spread softly over nodes (maxSkew 3) and zones (maxSkew 5).
var systemDefaults = []corev1.TopologySpreadConstraint{
	{MaxSkew: 3, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway},
	{MaxSkew: 5, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway},
}

// defaultConstraints applies systemDefaults to a pod with no constraints, selecting the
// pods of the Services, ReplicationControllers, ReplicaSets and StatefulSets that select it
// (kube-scheduler's DefaultSelector); none when nothing selects it.
func (p *Plugin) defaultConstraints(pod *corev1.Pod) []constraint {
	if len(pod.Spec.TopologySpreadConstraints) > 0 || p.services == nil {
		return nil
	}
	podLabels := labels.Set(pod.Labels)
	sel := labels.NewSelector()
	addSet := func(set map[string]string) {
		for k, v := range set {
			if r, err := labels.NewRequirement(k, "=", []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	if svcs, err := p.services.Services(pod.Namespace).List(labels.Everything()); err == nil {
		for _, s := range svcs {
			if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) {
				addSet(s.Spec.Selector)
			}
		}
	}
	if rcs, err := p.rcs.ReplicationControllers(pod.Namespace).List(labels.Everything()); err == nil {
		for _, rc := range rcs {
			if len(rc.Spec.Selector) > 0 && labels.SelectorFromSet(rc.Spec.Selector).Matches(podLabels) {
				addSet(rc.Spec.Selector)
			}
		}
	}
	addSelector := func(ls *metav1.LabelSelector) {
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil || s.Empty() || !s.Matches(podLabels) {
			return
		}
		reqs, _ := s.Requirements()
		sel = sel.Add(reqs...)
	}
	if rss, err := p.rss.ReplicaSets(pod.Namespace).List(labels.Everything()); err == nil {
		for _, rs := range rss {
			addSelector(rs.Spec.Selector)
		}
	}
	if sss, err := p.sss.StatefulSets(pod.Namespace).List(labels.Everything()); err == nil {
		for _, ss := range sss {
			addSelector(ss.Spec.Selector)
		}
	}
	if sel.Empty() {
		return nil
	}
	out := make([]constraint, 0, len(systemDefaults))
	for _, c := range systemDefaults {
		out = append(out, constraint{maxSkew: c.MaxSkew, minDomains: 1, key: c.TopologyKey, selector: sel, honorNodeAffinity: true})
	}
	return out
}

func (*Plugin) Name() string { return Name }

// PreFilter counts matching pods per domain of each DoNotSchedule constraint.
func (p *Plugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, nodes framework.NodeLister) *framework.Status {
	cs, err := constraints(pod.Pod, corev1.DoNotSchedule)
	if err != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod.Pod)
	all := nodes.List()
	s := &filterState{constraints: cs, minMatch: make([]int64, len(cs)), self: make([]int64, len(cs)), all: all,
		domains: make([][]int32, len(cs)), counts: make([][]int64, len(cs))}
	podLabels := labels.Set(pod.Pod.Labels)
	for i := range cs {
		s.domains[i] = make([]int32, len(all))
		if cs[i].selector.Matches(podLabels) {
			s.self[i] = 1
		}
	}
	present := make([]int32, len(cs))
	p.memoMu.Lock()
	k := p.counter(nodes)
	for j, n := range all {
		hasAll := true
		for i := range cs {
			e := k.entry(n, &cs[i], pod.Pod.Namespace)
			s.domains[i][j] = e.domain
			hasAll = hasAll && e.hasValue
		}
		if !hasAll {
			continue
		}
		for i := range cs {
			if !cs[i].counts(pod.Pod, n.Node(), affinity) {
				continue
			}
			d := s.domains[i][j]
			if int(d) >= len(s.counts[i]) {
				s.counts[i] = grow(s.counts[i], int(d)+1)
			}
			if s.counts[i][d] < 0 {
				s.counts[i][d] = 0
				present[i]++
			}
			s.counts[i][d] += k.count(n, &cs[i], pod.Pod.Namespace)
		}
	}
	p.memoMu.Unlock()
	for i := range cs {
		lowest := int64(math.MaxInt64)
		for _, n := range s.counts[i] {
			if n >= 0 {
				lowest = min(lowest, n)
			}
		}
		if lowest == math.MaxInt64 || present[i] < cs[i].minDomains {
			lowest = 0 // fewer domains than minDomains: the missing ones hold none
		}
		s.minMatch[i] = lowest
	}
	state.Write(filterKey, s)
	return nil
}

func (p *Plugin) Filter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	s, ok := framework.ReadAs[*filterState](state, filterKey)
	if !ok {
		return nil
	}
	// The node as PreFilter saw it (or a copy with other pods: preemption's what-if and
	// nominated pods change pods, not labels, and only labels matter here).
	j := n.Index
	if j >= len(s.all) || s.all[j].Node() != n.Node() {
		return s.filterByLabels(n)
	}
	for i, c := range s.constraints {
		d := s.domains[i][j]
		if d < 0 {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		if s.count(i, d)+s.self[i]-s.minMatch[i] > int64(c.maxSkew) {
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}

// filterByLabels is Filter for a node PreFilter did not see, by its labels.
func (s *filterState) filterByLabels(n *framework.NodeInfo) *framework.Status {
	s.byValueOnce.Do(func() {
		s.byValue = make([]map[string]int64, len(s.constraints))
		for i, c := range s.constraints {
			s.byValue[i] = map[string]int64{}
			for j, o := range s.all {
				if d := s.domains[i][j]; d >= 0 {
					s.byValue[i][o.Node().Labels[c.key]] = s.count(i, d)
				}
			}
		}
	})
	for i, c := range s.constraints {
		value, ok := n.Node().Labels[c.key]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		if s.byValue[i][value]+s.self[i]-s.minMatch[i] > int64(c.maxSkew) {
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}

type scoreState struct {
	// raw is each feasible node's score, by NodeInfo.Index: PreScore does every node's
	// work, Score only reads (ignored nodes: -1).
	raw     []int64
	ignored map[string]bool
}

// PreScore counts matching pods per domain of each ScheduleAnyway constraint, over the
// domains of the feasible nodes, and scores every feasible node.
func (p *Plugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, feasible []*framework.NodeInfo) *framework.Status {
	cs, err := constraints(pod.Pod, corev1.ScheduleAnyway)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(pod.Pod.Spec.TopologySpreadConstraints) == 0 {
		cs = p.defaultConstraints(pod.Pod)
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	// System defaults do not require every key: a node without a zone still spreads by host.
	requireAll := len(pod.Pod.Spec.TopologySpreadConstraints) > 0
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod.Pod)
	p.memoMu.Lock()
	defer p.memoMu.Unlock()
	k := p.counter(p.h.Nodes())
	s := &scoreState{ignored: map[string]bool{}}
	// Per constraint: its number of domains among the feasible nodes; for a key other than
	// the hostname, the matching pods per domain (by number, -1: not a feasible node's).
	sizes := make([]int, len(cs))
	counts := make([][]int64, len(cs))
	// A hostname domain is its one node, counted from the node's own pods as kube-scheduler
	// does; byHost (per value, the last feasible node's count wins) only when some node's
	// hostname label is not its name, so two nodes could share a domain.
	byHost := make([]map[string]int64, len(cs))
	tables := make([][]memoCount, len(cs))
	for i := range cs {
		tables[i] = k.table(&cs[i], pod.Pod.Namespace)
	}
	entry := func(n *framework.NodeInfo, i int) *memoCount { return k.at(tables[i], n, &cs[i], pod.Pod.Namespace) }
	all := p.h.Nodes().List()
	otherKeys := false
	for _, n := range feasible {
		if n.Index >= len(all) || all[n.Index] != n {
			return framework.AsStatus(fmt.Errorf("node %s is not the snapshot's", n.Name))
		}
		takesPart := requireAll
		for i := range cs {
			if has := entry(n, i).hasValue; has != requireAll {
				takesPart = has
				break
			}
		}
		if !takesPart {
			s.ignored[n.Name] = true
			continue
		}
		for i := range cs {
			e := entry(n, i)
			switch {
			case !e.hasValue:
			case cs[i].key == corev1.LabelHostname:
				sizes[i]++
				if e.value != n.Name && byHost[i] == nil {
					byHost[i] = map[string]int64{}
				}
			default:
				if int(e.domain) >= len(counts[i]) {
					counts[i] = grow(counts[i], int(e.domain)+1)
				}
				if counts[i][e.domain] < 0 {
					counts[i][e.domain] = 0
					sizes[i]++
				}
				otherKeys = true
			}
		}
	}
	for i := range cs {
		if byHost[i] == nil {
			continue
		}
		for _, n := range feasible {
			if e := entry(n, i); e.hasValue && !s.ignored[n.Name] {
				byHost[i][e.value] = 0
				if cs[i].counts(pod.Pod, n.Node(), affinity) {
					byHost[i][e.value] = e.count
				}
			}
		}
		sizes[i] = len(byHost[i])
	}
	if otherKeys {
		for _, n := range all {
			if requireAll && !hasAllKeys(n.Node(), cs) {
				continue
			}
			for i := range cs {
				if cs[i].key == corev1.LabelHostname {
					continue
				}
				e := entry(n, i)
				if !e.hasValue || int(e.domain) >= len(counts[i]) || counts[i][e.domain] < 0 || !cs[i].counts(pod.Pod, n.Node(), affinity) {
					continue
				}
				counts[i][e.domain] += e.count
			}
		}
	}
	weights := make([]float64, len(cs))
	for i := range cs {
		weights[i] = math.Log(float64(sizes[i] + 2))
	}
	s.raw = make([]int64, len(all))
	for _, n := range feasible {
		if s.ignored[n.Name] {
			s.raw[n.Index] = -1
			continue
		}
		var score float64
		for i := range cs {
			e := entry(n, i)
			if !e.hasValue {
				continue
			}
			var count int64
			switch {
			case cs[i].key != corev1.LabelHostname:
				count = counts[i][e.domain]
			case byHost[i] != nil:
				count = byHost[i][e.value]
			case cs[i].counts(pod.Pod, n.Node(), affinity):
				count = e.count
			}
			score += float64(count)*weights[i] + float64(cs[i].maxSkew-1)
		}
		s.raw[n.Index] = int64(math.Round(score))
	}
	state.Write(scoreKey, s)
	return nil
}

// grow extends counts to n domains, the new ones absent (-1).
func grow(counts []int64, n int) []int64 {
	for len(counts) < n {
		counts = append(counts, -1)
	}
	return counts
}

// Score grows with the matching pods in the node's domains (normalized in reverse),
// as PreScore computed it.
func (p *Plugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) (int64, *framework.Status) {
	s, ok := framework.ReadAs[*scoreState](state, scoreKey)
	if !ok || n.Index >= len(s.raw) || s.raw[n.Index] < 0 {
		return 0, nil
	}
	return s.raw[n.Index], nil
}

// NormalizeScore gives the emptiest domains 100 and ignored nodes 0.
func (p *Plugin) NormalizeScore(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	s, ok := framework.ReadAs[*scoreState](state, scoreKey)
	if !ok {
		return nil
	}
	ignored := func(name string) bool { return len(s.ignored) > 0 && s.ignored[name] }
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, sc := range scores {
		if !ignored(sc.Name) {
			lo, hi = min(lo, sc.Score), max(hi, sc.Score)
		}
	}
	for i := range scores {
		switch {
		case ignored(scores[i].Name):
			scores[i].Score = 0
		case hi == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (hi + lo - scores[i].Score) / hi
		}
	}
	return nil
}

func (*Plugin) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Kind: framework.KindPod, Action: framework.All},
		{Kind: framework.KindNode, Action: framework.Add | framework.Delete | framework.UpdateNodeLabel | framework.UpdateNodeTaint},
	}
}
