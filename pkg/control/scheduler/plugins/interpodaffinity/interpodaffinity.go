// Package interpodaffinity is kube-scheduler's InterPodAffinity plugin. Filter: the pod's
// required affinity terms must each find a matching pod in the node's topology domain (or
// the pod is the first of a group matching itself), its required anti-affinity terms must
// find none, and no pod already placed may have a required anti-affinity term matching
// the pod within its domain. Score: preferred terms of both sides, and existing pods'
// required affinity terms, weighted per domain.
package interpodaffinity

import (
	"context"

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

// counts maps topology key -> value -> number of pods.
type counts map[string]map[string]int64

func (c counts) add(key, value string) {
	if c[key] == nil {
		c[key] = map[string]int64{}
	}
	c[key][value]++
}

func (c counts) get(key, value string) int64 { return c[key][value] }

type filterState struct {
	existingAnti counts // domains where a placed pod's anti-affinity matches the pod
	affinity     counts // domains with pods matching all the pod's affinity terms
	anti         counts // domains with pods matching one of the pod's anti-affinity terms
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

func hasNamespaceSelector(terms []framework.AffinityTerm) bool {
	for _, t := range terms {
		if t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

// PreFilter counts, per topology domain, the pods that matter to the pod's required terms
// and the placed pods whose required anti-affinity matches the pod.
func (p *Plugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, nodes framework.NodeLister) *framework.Status {
	if pod.ParseError != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pod.ParseError.Error())
	}
	nsCache := map[string]labels.Set{}
	podNS := p.nsLabels(pod.Pod.Namespace, nsCache)
	s := &filterState{existingAnti: counts{}, affinity: counts{}, anti: counts{}}
	for _, n := range nodes.HavePodsWithRequiredAntiAffinity() {
		node := n.Node()
		for _, existing := range n.PodsWithRequiredAntiAffinity {
			for i := range existing.RequiredAntiAffinityTerms {
				// The namespace test first: most placed pods' terms are about other namespaces.
				t := &existing.RequiredAntiAffinityTerms[i]
				if !t.Matches(pod.Pod, podNS) {
					continue
				}
				if v, ok := node.Labels[t.TopologyKey]; ok {
					s.existingAnti.add(t.TopologyKey, v)
				}
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
	needNS := hasNamespaceSelector(pod.RequiredAffinityTerms) || hasNamespaceSelector(pod.RequiredAntiAffinityTerms)
	for _, n := range nodes.List() {
		node := n.Node()
		for _, existing := range n.Pods {
			var exNS labels.Set
			if needNS {
				exNS = p.nsLabels(existing.Pod.Namespace, nsCache)
			}
			if len(pod.RequiredAffinityTerms) > 0 && matchesAll(pod.RequiredAffinityTerms, existing.Pod, exNS) {
				for _, t := range pod.RequiredAffinityTerms {
					if v, ok := node.Labels[t.TopologyKey]; ok {
						s.affinity.add(t.TopologyKey, v)
					}
				}
			}
			for i := range pod.RequiredAntiAffinityTerms {
				t := &pod.RequiredAntiAffinityTerms[i]
				if !t.Matches(existing.Pod, exNS) {
					continue
				}
				if v, ok := node.Labels[t.TopologyKey]; ok {
					s.anti.add(t.TopologyKey, v)
				}
			}
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
	v, _ := state.Read(filterKey)
	s, ok := v.(*filterState)
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
			if s.affinity.get(t.TopologyKey, v) <= 0 {
				found = false
			}
		}
		// The first pod of a group that matches its own terms may go anywhere they can hold.
		if !found && !(len(s.affinity) == 0 && matchesAll(pod.RequiredAffinityTerms, pod.Pod, framework.NamespaceLabels(p.namespaces, pod.Pod.Namespace))) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
		}
	}
	for _, t := range pod.RequiredAntiAffinityTerms {
		if v, ok := node.Labels[t.TopologyKey]; ok && s.anti.get(t.TopologyKey, v) > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
		}
	}
	for key, values := range s.existingAnti {
		if v, ok := node.Labels[key]; ok && values[v] > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
		}
	}
	return nil
}

type scoreState struct {
	scores map[string]map[string]int64 // topology key -> value -> score
}

// PreScore adds up, per topology domain, the weights of every term that relates the pod
// to a placed pod; Skip when neither side has such terms.
func (p *Plugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	nodes := p.h.Nodes()
	own := len(pod.PreferredAffinityTerms)+len(pod.PreferredAntiAffinityTerms) > 0
	candidates := nodes.HavePodsWithAffinity()
	if own {
		candidates = nodes.List()
	}
	if len(candidates) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	nsCache := map[string]labels.Set{}
	podNS := p.nsLabels(pod.Pod.Namespace, nsCache)
	s := &scoreState{scores: map[string]map[string]int64{}}
	add := func(node *corev1.Node, key string, w int64) {
		v, ok := node.Labels[key]
		if !ok || w == 0 {
			return
		}
		if s.scores[key] == nil {
			s.scores[key] = map[string]int64{}
		}
		s.scores[key][v] += w
	}
	for _, n := range candidates {
		node := n.Node()
		existingPods := n.PodsWithAffinity
		if own {
			existingPods = n.Pods
		}
		for _, ex := range existingPods {
			var exNS labels.Set
			if own {
				exNS = p.nsLabels(ex.Pod.Namespace, nsCache)
			}
			for _, t := range pod.PreferredAffinityTerms {
				if t.Matches(ex.Pod, exNS) {
					add(node, t.TopologyKey, int64(t.Weight))
				}
			}
			for _, t := range pod.PreferredAntiAffinityTerms {
				if t.Matches(ex.Pod, exNS) {
					add(node, t.TopologyKey, -int64(t.Weight))
				}
			}
			for _, t := range ex.RequiredAffinityTerms {
				if t.Matches(pod.Pod, podNS) {
					add(node, t.TopologyKey, HardPodAffinityWeight)
				}
			}
			for _, t := range ex.PreferredAffinityTerms {
				if t.Matches(pod.Pod, podNS) {
					add(node, t.TopologyKey, int64(t.Weight))
				}
			}
			for _, t := range ex.PreferredAntiAffinityTerms {
				if t.Matches(pod.Pod, podNS) {
					add(node, t.TopologyKey, -int64(t.Weight))
				}
			}
		}
	}
	if len(s.scores) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(scoreKey, s)
	return nil
}

// Score sums the node's domains' scores (may be negative until normalized).
func (p *Plugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) (int64, *framework.Status) {
	v, _ := state.Read(scoreKey)
	s, ok := v.(*scoreState)
	if !ok {
		return 0, nil
	}
	var sum int64
	for key, values := range s.scores {
		if val, ok := n.Node().Labels[key]; ok {
			sum += values[val]
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
