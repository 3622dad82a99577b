package cache_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/cache"
	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// antiPod is a pod of ns with labels and one required anti-affinity term per selector.
func antiPod(name, ns string, labels map[string]string, selectors ...*metav1.LabelSelector) *corev1.Pod {
	p := schedtest.Pod(name, labels, 0)
	p.Namespace = ns
	if len(selectors) > 0 {
		var terms []corev1.PodAffinityTerm
		for _, s := range selectors {
			terms = append(terms, corev1.PodAffinityTerm{LabelSelector: s, TopologyKey: corev1.LabelHostname})
		}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}}
	}
	return p
}

func app(v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": v}}
}

// probeTerms are terms of every kind the index narrows differently: by label value (the
// whole selector or not), by a set of values, by namespace only (no "in" requirement),
// every namespace.
func probeTerms(t *testing.T) []framework.AffinityTerm {
	owner := antiPod("owner", "a", nil)
	specs := []corev1.PodAffinityTerm{
		{LabelSelector: app("web")},
		{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"}}},
		{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "db"}}}}},
		{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}},
		{LabelSelector: &metav1.LabelSelector{}, Namespaces: []string{"a", "b"}},
		{LabelSelector: app("web"), NamespaceSelector: &metav1.LabelSelector{}},
	}
	var out []framework.AffinityTerm
	for i := range specs {
		specs[i].TopologyKey = corev1.LabelHostname
		term, err := framework.NewAffinityTerm(owner, &specs[i])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, term)
	}
	return out
}

var probePods = []*corev1.Pod{
	antiPod("probe-web", "a", map[string]string{"app": "web"}),
	antiPod("probe-db", "a", map[string]string{"app": "db", "tier": "back"}),
	antiPod("probe-b", "b", map[string]string{"app": "web"}),
	antiPod("probe-none", "a", nil),
}

// checkIndex compares what the snapshot's index yields (for terms, after matching, as the
// plugin does) with a walk over every node's pods, and refuses a yielded pod or term that is not on
// the snapshot's NodeInfo it comes with, or that comes twice.
func checkIndex(t *testing.T, step string, s *cache.Snapshot) {
	t.Helper()
	onNode := map[*framework.PodInfo]*framework.NodeInfo{}
	for _, n := range s.List() {
		for _, pi := range n.Pods {
			onNode[pi] = n
		}
	}
	var withAffinity, withAnti, gotAffinity, gotAnti []string
	for _, n := range s.List() {
		if len(n.PodsWithAffinity) > 0 {
			withAffinity = append(withAffinity, n.Node().Name)
		}
		if len(n.PodsWithRequiredAntiAffinity) > 0 {
			withAnti = append(withAnti, n.Node().Name)
		}
	}
	for _, n := range s.HavePodsWithAffinity() {
		gotAffinity = append(gotAffinity, n.Node().Name)
	}
	for _, n := range s.HavePodsWithRequiredAntiAffinity() {
		gotAnti = append(gotAnti, n.Node().Name)
	}
	sameSet(t, step+": nodes with affinity pods", gotAffinity, withAffinity)
	sameSet(t, step+": nodes with required anti-affinity pods", gotAnti, withAnti)
	for i, term := range probeTerms(t) {
		var want, got []string
		for pi, n := range onNode {
			if term.Matches(pi.Pod, nil) {
				want = append(want, pi.Pod.Name+"@"+n.Node().Name)
			}
		}
		seen := map[*framework.PodInfo]bool{}
		for pi, n := range s.PodsMatching(&term, noLabels) {
			if onNode[pi] != n || s.Get(n.Node().Name) != n {
				t.Fatalf("%s: term %d: index yields %s on %s, not in the snapshot there", step, i, pi.Pod.Name, n.Node().Name)
			}
			if seen[pi] {
				t.Fatalf("%s: term %d: %s yielded twice", step, i, pi.Pod.Name)
			}
			seen[pi] = true
			got = append(got, pi.Pod.Name+"@"+n.Node().Name)
		}
		sameSet(t, fmt.Sprintf("%s: pods for term %d", step, i), got, want)
	}
	for _, probe := range probePods {
		var want, got []string
		for pi, n := range onNode {
			for i := range pi.RequiredAntiAffinityTerms {
				if term := &pi.RequiredAntiAffinityTerms[i]; term.Matches(probe, nil) {
					want = append(want, term.Signature()+"@"+n.Node().Name)
				}
			}
		}
		seen := map[string]bool{}
		for term, holders := range s.RequiredAntiAffinityTermsFor(probe) {
			if seen[term.Signature()] {
				t.Fatalf("%s: %s: terms %q yielded twice", step, probe.Name, term.Signature())
			}
			seen[term.Signature()] = true
			for n := range holders {
				if s.Get(n.Node().Name) != n {
					t.Fatalf("%s: %s: index yields a node not in the snapshot", step, probe.Name)
				}
				if term.Matches(probe, nil) {
					got = append(got, term.Signature()+"@"+n.Node().Name)
				}
			}
		}
		sameSet(t, step+": anti-affinity terms for "+probe.Name, got, want)
	}
}

func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	sort.Strings(got)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: index gives %v, the nodes hold %v", what, got, want)
	}
}

// TestPodIndexFollowsTheCache changes the cache in every way a pod's placement changes and
// checks the snapshot's index after each: it must never yield a pod or term that left, or
// miss one that came.
func TestPodIndexFollowsTheCache(t *testing.T) {
	c := cache.New()
	for _, n := range []string{"n1", "n2", "n3"} {
		c.AddNode(schedtest.Node(n, nil))
	}
	s := cache.NewSnapshot()
	step := func(name string, change func()) {
		t.Helper()
		change()
		c.UpdateSnapshot(s)
		checkIndex(t, name, s)
	}
	web := schedtest.On(antiPod("web", "a", map[string]string{"app": "web", "tier": "front"}, app("web")), "n1")
	db := schedtest.On(antiPod("db", "a", map[string]string{"app": "db"}, app("web"), &metav1.LabelSelector{}), "n2")
	other := schedtest.On(antiPod("other", "b", map[string]string{"app": "web"}), "n1")
	step("add", func() { c.AddPod(web); c.AddPod(db); c.AddPod(other) })

	assumed := antiPod("assumed", "a", map[string]string{"app": "web"}, app("db"))
	step("assume", func() {
		if err := c.AssumePod(framework.NewPodInfo(assumed), "n3"); err != nil {
			t.Fatal(err)
		}
	})
	if n := countPods(s, probeTerms(t)[0]); n != 2 {
		t.Fatalf("assumed pod not indexed: %d pods for app=web in a, want 2", n)
	}
	step("confirm", func() { c.AddPod(schedtest.On(assumed.DeepCopy(), "n3")) })

	relabelled := web.DeepCopy()
	relabelled.Labels = map[string]string{"app": "db"}
	relabelled.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector = app("db")
	step("update labels and terms", func() { c.UpdatePod(relabelled) })
	if n := countPods(s, probeTerms(t)[0]); n != 1 {
		t.Fatalf("relabelled pod still indexed under its old label: %d pods for app=web in a, want 1", n)
	}

	forgotten := antiPod("forgotten", "a", map[string]string{"app": "web"}, app("web"))
	step("assume again", func() { _ = c.AssumePod(framework.NewPodInfo(forgotten), "n2") })
	step("forget", func() { c.ForgetPod(forgotten) })
	if n := countPods(s, probeTerms(t)[0]); n != 1 {
		t.Fatalf("forgotten pod still indexed: %d pods for app=web in a, want 1", n)
	}

	// n2 holds db, mid and last: taking mid out moves last into its place.
	mid := schedtest.On(antiPod("mid", "a", map[string]string{"app": "web"}, app("web")), "n2")
	last := schedtest.On(antiPod("last", "a", map[string]string{"app": "db"}, app("db")), "n2")
	step("two more on one node", func() { c.AddPod(mid); c.AddPod(last) })
	step("one out of the middle", func() { c.RemovePod(mid) })
	step("delete", func() { c.RemovePod(db); c.RemovePod(last) })
	step("remove a node with pods", func() { c.RemoveNode("n1") })
	step("its pods go", func() { c.RemovePod(relabelled); c.RemovePod(other) })
	step("the node comes back with a pod", func() {
		c.AddNode(schedtest.Node("n1", nil))
		c.AddPod(schedtest.On(antiPod("back", "b", map[string]string{"app": "web"}, app("web")), "n1"))
	})
}

func countPods(s *cache.Snapshot, term framework.AffinityTerm) int {
	n := 0
	for range s.PodsMatching(&term, noLabels) {
		n++
	}
	return n
}

// noLabels: the namespaces have none (the probe's namespaceSelector selects every one).
func noLabels(string) labels.Set { return nil }
