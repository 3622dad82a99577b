package cache

import (
	"iter"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// podIndex finds the snapshot's placed pods by namespace and label, and their required
// anti-affinity terms by the namespace and label they select, so InterPodAffinity's
// PreFilter matches the pods and terms that may concern the incoming pod rather than every
// placed one (kube-scheduler walks them all). It holds exactly the pods of the snapshot's
// NodeInfos, each with that NodeInfo: UpdateSnapshot takes a node's old pods out and puts
// its new ones in wherever it changes an entry of the snapshot.
type podIndex struct {
	namespaces map[string]*namespacePods
	// anti holds the required anti-affinity terms by each namespace they name; antiAnyNS
	// those with a namespaceSelector (any namespace may match).
	anti      map[string]*termBucket
	antiAnyNS termGroups
}

type labelKV struct{ key, value string }

type placedPods map[*framework.PodInfo]*framework.NodeInfo

type namespacePods struct {
	all     placedPods
	byLabel map[labelKV]placedPods
}

// termRef is one required anti-affinity term of a placed pod.
type termRef struct {
	pod *framework.PodInfo
	i   int
}

// termGroup is the placed pods' terms of one signature, each with its pod's node.
type termGroup map[termRef]*framework.NodeInfo

// termGroups are by signature: a Deployment's replicas' terms are matched once.
type termGroups map[string]termGroup

func (g termGroups) add(ref termRef, n *framework.NodeInfo) {
	sig := ref.term().Signature()
	if g[sig] == nil {
		g[sig] = termGroup{}
	}
	g[sig][ref] = n
}

func (g termGroups) remove(ref termRef) {
	sig := ref.term().Signature()
	delete(g[sig], ref)
	if len(g[sig]) == 0 {
		delete(g, sig)
	}
}

func (r termRef) term() *framework.AffinityTerm { return &r.pod.RequiredAntiAffinityTerms[r.i] }

type termBucket struct {
	byLabel map[labelKV]termGroups // by the term's IndexLabel, once per value
	other   termGroups             // terms without an IndexLabel
}

func newPodIndex() *podIndex {
	return &podIndex{namespaces: map[string]*namespacePods{}, anti: map[string]*termBucket{}, antiAnyNS: termGroups{}}
}

func (x *podIndex) addNode(n *framework.NodeInfo) {
	for _, pi := range n.Pods {
		x.add(pi, n)
	}
}

func (x *podIndex) removeNode(n *framework.NodeInfo) {
	for _, pi := range n.Pods {
		x.remove(pi)
	}
}

// update brings the entries of n, which held the pods old, to its pods now. A change
// mostly adds or takes out one pod (AddPod appends, RemovePod moves the last pod into the
// gap), and a pod in the same place keeps its entries, which name the same NodeInfo: only
// the places that differ are redone, not the node's every pod.
func (x *podIndex) update(n *framework.NodeInfo, old []*framework.PodInfo) {
	now := n.Pods
	same := min(len(old), len(now))
	for i, pi := range old {
		if i >= same || pi != now[i] {
			x.remove(pi)
		}
	}
	for i, pi := range now {
		if i >= same || pi != old[i] {
			x.add(pi, n)
		}
	}
}

func (x *podIndex) add(pi *framework.PodInfo, n *framework.NodeInfo) {
	pod := pi.Pod
	ns := x.namespaces[pod.Namespace]
	if ns == nil {
		ns = &namespacePods{all: placedPods{}, byLabel: map[labelKV]placedPods{}}
		x.namespaces[pod.Namespace] = ns
	}
	ns.all[pi] = n
	for k, v := range pod.Labels {
		kv := labelKV{k, v}
		m := ns.byLabel[kv]
		if m == nil {
			m = placedPods{}
			ns.byLabel[kv] = m
		}
		m[pi] = n
	}
	x.eachTermSlot(pi, func(ref termRef, g termGroups) { g.add(ref, n) }, true)
}

func (x *podIndex) remove(pi *framework.PodInfo) {
	pod := pi.Pod
	ns := x.namespaces[pod.Namespace]
	if ns == nil {
		return
	}
	delete(ns.all, pi)
	if len(ns.all) == 0 {
		delete(x.namespaces, pod.Namespace)
	} else {
		for k, v := range pod.Labels {
			kv := labelKV{k, v}
			if m := ns.byLabel[kv]; m != nil {
				delete(m, pi)
				if len(m) == 0 {
					delete(ns.byLabel, kv)
				}
			}
		}
	}
	x.eachTermSlot(pi, func(ref termRef, g termGroups) { g.remove(ref) }, false)
}

// eachTermSlot calls fn with every map a placed pod's required anti-affinity terms belong
// in (made when create, skipped when missing otherwise); emptied maps are dropped.
func (x *podIndex) eachTermSlot(pi *framework.PodInfo, fn func(termRef, termGroups), create bool) {
	for i := range pi.RequiredAntiAffinityTerms {
		t := &pi.RequiredAntiAffinityTerms[i]
		ref := termRef{pi, i}
		if t.NamespaceSelector != nil {
			fn(ref, x.antiAnyNS)
			continue
		}
		key, values, _ := t.IndexLabel()
		for ns := range t.Namespaces {
			b := x.anti[ns]
			if b == nil {
				if !create {
					continue
				}
				b = &termBucket{byLabel: map[labelKV]termGroups{}, other: termGroups{}}
				x.anti[ns] = b
			}
			if key == "" {
				fn(ref, b.other)
			}
			for _, v := range values {
				kv := labelKV{key, v}
				m := b.byLabel[kv]
				if m == nil {
					if !create {
						continue
					}
					m = termGroups{}
					b.byLabel[kv] = m
				}
				fn(ref, m)
				if len(m) == 0 {
					delete(b.byLabel, kv)
				}
			}
			if len(b.other) == 0 && len(b.byLabel) == 0 {
				delete(x.anti, ns)
			}
		}
	}
}

// PodsMatching yields the placed pods term selects: those in its namespaces (every
// namespace when it has a namespaceSelector) that carry its IndexLabel, each matched
// unless the label is the whole selector.
func (s *Snapshot) PodsMatching(term *framework.AffinityTerm, nsLabels func(string) labels.Set) iter.Seq2[*framework.PodInfo, *framework.NodeInfo] {
	key, values, exact := term.IndexLabel()
	return func(yield func(*framework.PodInfo, *framework.NodeInfo) bool) {
		each := func(m placedPods) bool {
			for pi, n := range m {
				if (exact || term.Matches(pi.Pod, nsLabelsOf(term, pi, nsLabels))) && !yield(pi, n) {
					return false
				}
			}
			return true
		}
		if term.NamespaceSelector != nil {
			for _, ns := range s.index.namespaces {
				if !each(ns.all) {
					return
				}
			}
			return
		}
		for name := range term.Namespaces {
			ns := s.index.namespaces[name]
			if ns == nil {
				continue
			}
			if key == "" {
				if !each(ns.all) {
					return
				}
				continue
			}
			for _, v := range values {
				if !each(ns.byLabel[labelKV{key, v}]) {
					return
				}
			}
		}
	}
}

// nsLabelsOf reads a pod's namespace's labels only for a term that has a namespaceSelector.
func nsLabelsOf(term *framework.AffinityTerm, pi *framework.PodInfo, nsLabels func(string) labels.Set) labels.Set {
	if term.NamespaceSelector == nil {
		return nil
	}
	return nsLabels(pi.Pod.Namespace)
}

// RequiredAntiAffinityTermsFor yields the placed pods' required anti-affinity terms that
// name pod's namespace (or have a namespaceSelector) and whose IndexLabel pod carries (or
// that have none): one term for all those of a signature, with the nodes of the pods that
// have it (a node once per such pod).
func (s *Snapshot) RequiredAntiAffinityTermsFor(pod *corev1.Pod) iter.Seq2[*framework.AffinityTerm, iter.Seq[*framework.NodeInfo]] {
	return func(yield func(*framework.AffinityTerm, iter.Seq[*framework.NodeInfo]) bool) {
		each := func(groups termGroups) bool {
			for _, g := range groups {
				var t *framework.AffinityTerm
				for ref := range g {
					t = ref.term()
					break
				}
				holders := func(yield func(*framework.NodeInfo) bool) {
					for _, n := range g {
						if !yield(n) {
							return
						}
					}
				}
				if !yield(t, holders) {
					return false
				}
			}
			return true
		}
		if !each(s.index.antiAnyNS) {
			return
		}
		b := s.index.anti[pod.Namespace]
		if b == nil || !each(b.other) {
			return
		}
		for k, v := range pod.Labels {
			if !each(b.byLabel[labelKV{k, v}]) {
				return
			}
		}
	}
}
