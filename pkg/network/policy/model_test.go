package policy

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/proxy/ipset"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// modelState: local pod x/a (pod=a, serving "http" on 8080), remote x/r (pod=other) and
// policy from-b: x/a takes ingress from pod=b and sends egress to pod=b's "http" port.
func modelState() *State {
	np := withIngress(policy("x", "from-b", sel("pod", "a"), ingress, egress),
		networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("pod", "b")}}})
	np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{
		To:    []networkingv1.NetworkPolicyPeer{{PodSelector: sel("pod", "b")}},
		Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, intstr.FromString("http"))},
	}}
	return &State{Node: "node1", Pods: []*corev1.Pod{
		withHTTP(statePod("x", "a", "node1", "10.0.0.1", map[string]string{"pod": "a"})),
		withHTTP(statePod("x", "r", "node2", "10.0.1.1", map[string]string{"pod": "other"})),
	}, Policies: []*networkingv1.NetworkPolicy{np}}
}

func withHTTP(p *corev1.Pod) *corev1.Pod {
	p.Spec.Containers = []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}
	return p
}

// change applies pods (key -> new version, nil: deleted) to st's model and to st itself,
// and checks that the model is then what a full build of the new state gives.
func change(t *testing.T, st *State, pods map[string]*corev1.Pod) *podDelta {
	t.Helper()
	_, m := build(st)
	d := m.applyPods(pods)
	var next []*corev1.Pod
	for _, p := range st.Pods {
		if _, changed := pods[podKey(p)]; !changed {
			next = append(next, p)
		}
	}
	for _, p := range pods {
		if p != nil {
			next = append(next, p)
		}
	}
	st.Pods = next
	want, got := Build(st), m.ruleset()
	if w, g := want.Restore(nil), got.Restore(nil); w != g {
		t.Errorf("rules after the pods' changes differ from a full build's:\n%s\nfull build:\n%s", g, w)
	}
	for _, s := range want.Sets {
		if g := m.b.sets[s.Name]; g == nil || !maps.Equal(g.Entries, s.Entries) {
			t.Errorf("set %s after the pods' changes: %v; full build: %v", s.Name, g, s.Entries)
		}
	}
	return d
}

// setLines are the ipset lines that op ("add", "del") ip's entries in the sets of st's
// rules: the ingress and egress peer sets and the egress named-port set.
func setLines(st *State, op, ip string) string {
	var out []string
	for _, s := range Build(st).Sets {
		e := ip
		if s.Type == hashIPPort {
			e = ipset.IPPort(ip, "tcp", 8080)
		}
		out = append(out, op+" "+s.Name+" "+e+" -exist\n")
	}
	return strings.Join(out, "")
}

// TestLabelChangeWritesSetMembersOnly: a remote pod gaining the peer label is added to the
// peer set and the named-port set and no rule is written; losing it, deleted from both.
func TestLabelChangeWritesSetMembersOnly(t *testing.T) {
	st := modelState()
	r := withHTTP(statePod("x", "r", "node2", "10.0.1.1", map[string]string{"pod": "b"}))
	d := change(t, st, map[string]*corev1.Pod{"x/r": r})
	if want := setLines(st, "add", "10.0.1.1"); d.sets != want || strings.Count(want, "\n") != 3 {
		t.Errorf("ipset lines:\n%s\nwant:\n%s", d.sets, want)
	}
	if d.rules() != "" {
		t.Errorf("rules written for a peer's label:\n%s", d.rules())
	}
	r = withHTTP(statePod("x", "r", "node2", "10.0.1.1", map[string]string{"pod": "other"}))
	d = change(t, st, map[string]*corev1.Pod{"x/r": r})
	if want := setLines(st, "del", "10.0.1.1"); d.sets != want {
		t.Errorf("ipset lines:\n%s\nwant:\n%s", d.sets, want)
	}
	if d.rules() != "" {
		t.Errorf("rules written for a peer's label:\n%s", d.rules())
	}
	if d = change(t, st, map[string]*corev1.Pod{"x/r": r.DeepCopy()}); d.sets != "" || d.rules() != "" {
		t.Errorf("an unchanged pod wrote sets %q, rules %q", d.sets, d.rules())
	}
}

// TestNewPodWritesOnlyItsChains: a new pod of the node that the policy selects gets its two
// chains and its jumps (TopChain, InputChain and OutputChain written again), nothing else; a new remote pod that is a
// peer only joins the sets.
func TestNewPodWritesOnlyItsChains(t *testing.T) {
	st := modelState()
	n := statePod("x", "n", "node1", "10.0.0.2", map[string]string{"pod": "a"})
	d := change(t, st, map[string]*corev1.Pod{"x/n": n})
	var names []string
	for _, c := range d.chains {
		names = append(names, c.Name)
	}
	if want := []string{TopChain, InputChain, OutputChain, ChainName(n, egress), ChainName(n, ingress)}; !slices.Equal(names, want) {
		t.Errorf("chains written %v, want %v", names, want)
	}
	if d.sets != "" || len(d.gone) != 0 {
		t.Errorf("sets %q and gone %v for a pod no peer selects", d.sets, d.gone)
	}
	if top := d.chains[0].Rules; len(top) != 5 || !strings.Contains(strings.Join(top, "\n"), "-s 10.0.0.2/32") {
		t.Errorf("TopChain:\n%s", strings.Join(top, "\n"))
	}
	if input := d.chains[1].Rules; len(input) != 3 || !strings.Contains(input[2], "-s 10.0.0.2/32") {
		t.Errorf("InputChain, want the replies' RETURN and the two egress jumps:\n%s", strings.Join(input, "\n"))
	}
	b := withHTTP(statePod("y", "b", "node2", "10.0.1.2", map[string]string{"pod": "b"}))
	b.Namespace = "x"
	d = change(t, st, map[string]*corev1.Pod{"x/b": b})
	if d.rules() != "" || d.sets != setLines(st, "add", "10.0.1.2") {
		t.Errorf("a new peer wrote rules %q, sets %q", d.rules(), d.sets)
	}
}

// TestDeletedPodRemovesItsChainsAndEntries: a deleted local pod's chains go and its jumps
// with them; a pod that loses its IP (ended) is as deleted; a deleted peer leaves the sets,
// unless a pod that took over its IP still gives the entry.
func TestDeletedPodRemovesItsChainsAndEntries(t *testing.T) {
	st := modelState()
	a := st.Pods[0]
	d := change(t, st, map[string]*corev1.Pod{"x/a": nil})
	if want := []string{ChainName(a, egress), ChainName(a, ingress)}; !slices.Equal(d.gone, want) {
		t.Errorf("chains deleted %v, want %v", d.gone, want)
	}
	if len(d.chains) != 3 || d.chains[0].Name != TopChain || len(d.chains[0].Rules) != 1 || d.chains[1].Name != InputChain || len(d.chains[1].Rules) != 1 ||
		d.chains[2].Name != OutputChain || len(d.chains[2].Rules) != 1 {
		t.Errorf("chains written %v", d.chains)
	}

	st = modelState()
	st.Pods[1].Labels["pod"] = "b"
	ended := st.Pods[1].DeepCopy()
	ended.Status.Phase = corev1.PodSucceeded
	if d := change(t, st, map[string]*corev1.Pod{"x/r": ended}); d.sets != setLines(st, "del", "10.0.1.1") || d.rules() != "" {
		t.Errorf("an ended peer: sets %q, rules %q", d.sets, d.rules())
	}

	st = modelState()
	st.Pods[1].Labels["pod"] = "b"
	heir := withHTTP(statePod("x", "r2", "node2", "10.0.1.1", map[string]string{"pod": "b"}))
	if d := change(t, st, map[string]*corev1.Pod{"x/r": nil, "x/r2": heir}); d.sets != "" {
		t.Errorf("a peer replaced by one with its IP and labels wrote %q", d.sets)
	}
}

// TestNewlySelectedPodMakesItsRuleSets: a pod of the node that starts being selected by a
// policy no pod matched before gets the chains and the sets of that policy's rules, created
// and filled before the rules that match them.
func TestNewlySelectedPodMakesItsRuleSets(t *testing.T) {
	st := modelState()
	np := withIngress(policy("x", "from-other", sel("pod", "lonely"), ingress),
		networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("pod", "other")}}})
	st.Policies = append(st.Policies, np)
	a := st.Pods[0].DeepCopy()
	a.Labels["pod"] = "lonely"
	d := change(t, st, map[string]*corev1.Pod{"x/a": a})
	if len(d.fresh) != 1 || !strings.HasPrefix(d.sets, "create "+d.fresh[0]+" hash:ip") || !strings.Contains(d.sets, "add "+d.fresh[0]+" 10.0.1.1\n") {
		t.Errorf("fresh sets %v, ipset lines:\n%s", d.fresh, d.sets)
	}
	if len(d.gone) != 1 || d.gone[0] != ChainName(a, egress) {
		t.Errorf("chains deleted %v, want the egress one", d.gone)
	}
}
