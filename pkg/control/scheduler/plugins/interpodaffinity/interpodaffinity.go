// Package interpodaffinity is kube-scheduler's InterPodAffinity plugin. Filter: the pod's
// required affinity terms must each find a matching pod in the node's topology domain (or
// the pod is the first of a group matching itself), its required anti-affinity terms must
// find none, and no pod already placed may have a required anti-affinity term matching
// the pod within its domain. Score: preferred terms of both sides, and existing pods'
// required affinity terms, weighted per domain.
package interpodaffinity

import (
	"context"
	"slices"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// Name is the plugin's name in profiles.
const Name = "InterPodAffinity"

// kube-scheduler's wording.
const (
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	ErrReasonAffinityRulesNotMatch             = "node(s) didn't match pod affinity rules"
	ErrReasonAntiAffinityRulesNotMatch         = "node(s) didn't match pod anti-affinity rules"
)

// HardPodAffinityWeight scores an existing pod's required affinity term matching the
// incoming pod (InterPodAffinityArgs' default).
const HardPodAffinityWeight = 1

const (
	filterKey = Name + "/preFilter"
	scoreKey  = Name + "/preScore"
)

// topologyPair is one topology domain: a node label key and value (kube-scheduler's).
type topologyPair struct{ key, value string }

// counts maps a topology domain to a number of pods (one hash per lookup).
type counts map[topologyPair]int64

// addNode counts one for node's domain of key, when the node has that label.
func (c counts) addNode(n *framework.NodeInfo, key string) bool {
	v, ok := n.Node().Labels[key]
	if ok {
		c[topologyPair{key, v}]++
	}
	return ok
}

type filterState struct {
	existingAnti counts // domains where a placed pod's anti-affinity matches the pod
	affinity     counts // domains with pods matching all the pod's affinity terms
	anti         counts // domains with pods matching one of the pod's anti-affinity terms
	// existingAntiKeys are the topology keys in existingAnti, so Filter need not walk a map.
	existingAntiKeys []string
}

// Plugin is the filter and score.
type Plugin struct {
	h          framework.Handle
	namespaces corelisters.NamespaceLister
}

// New makes the plugin.
func New(h framework.Handle) (framework.Plugin, error) {
	return &Plugin{h: h, namespaces: h.Informers().Core().V1().Namespaces().Lister()}, nil
}

func (*Plugin) Name() string { return Name }

func (p *Plugin) nsLabels(ns string, cache map[string]labels.Set) labels.Set {
	if l, ok := cache[ns]; ok {
		return l
	}
	l := framework.NamespaceLabels(p.namespaces, ns)
	cache[ns] = l
	return l
}

// nsLabelsFor reads pod's namespace's labels only when one of terms has a namespaceSelector.
func nsLabelsFor(terms []framework.AffinityTerm, pod *framework.PodInfo, nsLabels func(string) labels.Set) labels.Set {
	for _, t := range terms {
		if t.NamespaceSelector != nil {
			return nsLabels(pod.Pod.Namespace)
		}
	}
	return nil
}

// PreFilter counts, per topology domain, the pods that matter to the pod's required terms
// and the placed pods whose required anti-affinity matches the pod. The snapshot's index
// hands it only the placed pods and terms in the right namespace with the right label; the
// counts are kube-scheduler's.
func (p *Plugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, nodes framework.NodeLister) *framework.Status {
	if pod.ParseError != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pod.ParseError.Error())
	}
	nsCache := map[string]labels.Set{}
	podNS := p.nsLabels(pod.Pod.Namespace, nsCache)
	s := &filterState{existingAnti: counts{}, affinity: counts{}, anti: counts{}}
	for t, holders := range nodes.RequiredAntiAffinityTermsFor(pod.Pod) {
		if !t.Matches(pod.Pod, podNS) {
			continue
		}
		for n := range holders {
			if s.existingAnti.addNode(n, t.TopologyKey) && !slices.Contains(s.existingAntiKeys, t.TopologyKey) {
				s.existingAntiKeys = append(s.existingAntiKeys, t.TopologyKey)
			}
		}
	}
	if len(pod.RequiredAffinityTerms) == 0 && len(pod.RequiredAntiAffinityTerms) == 0 {
		if len(s.existingAnti) == 0 {
			return framework.NewStatus(framework.Skip)
		}
		state.Write(filterKey, s)
		return nil
	}
	nsLabels := func(ns string) labels.Set { return p.nsLabels(ns, nsCache) }
	// A pod counts for the affinity terms when it matches them all, so the first term's
	// pods are all there are.
	if terms := pod.RequiredAffinityTerms; len(terms) > 0 {
		for existing, n := range nodes.PodsMatching(&terms[0], nsLabels) {
			if matchesAll(terms[1:], existing.Pod, nsLabelsFor(terms[1:], existing, nsLabels)) {
				for i := range terms {
					s.affinity.addNode(n, terms[i].TopologyKey)
				}
			}
		}
	}
	for i := range pod.RequiredAntiAffinityTerms {
		t := &pod.RequiredAntiAffinityTerms[i]
		for _, n := range nodes.PodsMatching(t, nsLabels) {
			s.anti.addNode(n, t.TopologyKey)
		}
	}
	state.Write(filterKey, s)
	return nil
}

func matchesAll(terms []framework.AffinityTerm, pod *corev1.Pod, nsLabels labels.Set) bool {
	for i := range terms {
		if !terms[i].Matches(pod, nsLabels) {
			return false
		}
	}
	return true
}

func (p *Plugin) Filter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	s, ok := framework.ReadAs[*filterState](state, filterKey)
	if !ok {
		return nil
	}
	node := n.Node()
	// kube-scheduler's order: the pod's affinity, its anti-affinity, then the placed pods'.
	if len(pod.RequiredAffinityTerms) > 0 {
		found := true
		for _, t := range pod.RequiredAffinityTerms {
			v, ok := node.Labels[t.TopologyKey]
			if !ok {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
			}
			if s.affinity[topologyPair{t.TopologyKey, v}] <= 0 {
				found = false
			}
		}
		// The first pod of a group that matches its own terms may go anywhere they can hold.
		if !found && !(len(s.affinity) == 0 && matchesAll(pod.RequiredAffinityTerms, pod.Pod, framework.NamespaceLabels(p.namespaces, pod.Pod.Namespace))) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
		}
	}
	if len(s.anti) > 0 {
		for _, t := range pod.RequiredAntiAffinityTerms {
			if v, ok := node.Labels[t.TopologyKey]; ok && s.anti[topologyPair{t.TopologyKey, v}] > 0 {
				return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
			}
		}
	}
	for _, key := range s.existingAntiKeys {
		if v, ok := node.Labels[key]; ok && s.existingAnti[topologyPair{key, v}] > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
		}
	}
	return nil
}

type scoreState struct {
	scores counts   // topology domain -> score
	keys   []string // the topology keys in scores
}

func (s *scoreState) add(n *framework.NodeInfo, key string, w int64) {
	v, ok := n.Node().Labels[key]
	if !ok || w == 0 {
		return
	}
	if !slices.Contains(s.keys, key) {
		s.keys = append(s.keys, key)
	}
	s.scores[topologyPair{key, v}] += w
}

// PreScore adds up, per topology domain, the weights of every term that relates the pod
// to a placed pod; Skip when neither side has such terms. The pod's own preferred terms
// look at the pods the snapshot's index finds for them; placed pods' terms at the nodes
// holding pods with affinity.
func (p *Plugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	nodes := p.h.Nodes()
	own := len(pod.PreferredAffinityTerms)+len(pod.PreferredAntiAffinityTerms) > 0
	withAffinity := nodes.HavePodsWithAffinity()
	if !own && len(withAffinity) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	nsCache := map[string]labels.Set{}
	podNS := p.nsLabels(pod.Pod.Namespace, nsCache)
	s := &scoreState{scores: counts{}}
	nsLabels := func(ns string) labels.Set { return p.nsLabels(ns, nsCache) }
	ownTerms := func(terms []framework.WeightedAffinityTerm, sign int64) {
		for i := range terms {
			t := &terms[i]
			for _, n := range nodes.PodsMatching(&t.AffinityTerm, nsLabels) {
				s.add(n, t.TopologyKey, sign*int64(t.Weight))
			}
		}
	}
	ownTerms(pod.PreferredAffinityTerms, 1)
	ownTerms(pod.PreferredAntiAffinityTerms, -1)
	for _, n := range withAffinity {
		for _, ex := range n.PodsWithAffinity {
			for _, t := range ex.RequiredAffinityTerms {
				if t.Matches(pod.Pod, podNS) {
					s.add(n, t.TopologyKey, HardPodAffinityWeight)
				}
			}
			for _, t := range ex.PreferredAffinityTerms {
				if t.Matches(pod.Pod, podNS) {
					s.add(n, t.TopologyKey, int64(t.Weight))
				}
			}
			for _, t := range ex.PreferredAntiAffinityTerms {
				if t.Matches(pod.Pod, podNS) {
					s.add(n, t.TopologyKey, -int64(t.Weight))
				}
			}
		}
	}
	if len(s.keys) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(scoreKey, s)
	return nil
}

// Score sums the node's domains' scores (may be negative until normalized).
func (p *Plugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) (int64, *framework.Status) {
	s, ok := framework.ReadAs[*scoreState](state, scoreKey)
	if !ok {
		return 0, nil
	}
	var sum int64
	for _, key := range s.keys {
		if val, ok := n.Node().Labels[key]; ok {
			sum += s.scores[topologyPair{key, val}]
		}
	}
	return sum, nil
}

// NormalizeScore maps the lowest score to 0 and the highest to 100.
func (p *Plugin) NormalizeScore(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	if _, ok := state.Read(scoreKey); !ok {
		return nil
	}
	if len(scores) == 0 {
		return nil
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		if hi > lo {
			scores[i].Score = framework.MaxNodeScore * (scores[i].Score - lo) / (hi - lo)
		} else {
			scores[i].Score = 0
		}
	}
	return nil
}

func (*Plugin) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Kind: framework.KindPod, Action: framework.All},
		{Kind: framework.KindNode, Action: framework.Add | framework.UpdateNodeLabel},
	}
}
