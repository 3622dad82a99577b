package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func statePod(ns, name, node, ip string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Labels: labels},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
}

// TestMembershipChangesOnlySets: a remote pod gaining a peer label changes a set's members
// and leaves the iptables input as it was, so the sync writes no rules.
func TestMembershipChangesOnlySets(t *testing.T) {
	np := withIngress(policy("x", "from-b", sel("pod", "a"), ingress),
		networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("pod", "b")}}})
	local := statePod("x", "a", "node1", "10.0.0.1", map[string]string{"pod": "a"})
	remote := statePod("x", "r", "node2", "10.0.1.1", map[string]string{"pod": "other"})
	before := Build(&State{Node: "node1", Pods: []*corev1.Pod{local, remote}, Policies: []*networkingv1.NetworkPolicy{np}})
	remote = remote.DeepCopy()
	remote.Labels["pod"] = "b"
	after := Build(&State{Node: "node1", Pods: []*corev1.Pod{local, remote}, Policies: []*networkingv1.NetworkPolicy{np}})
	if before.Restore(nil) != after.Restore(nil) {
		t.Errorf("rules changed with a peer's label:\n%s\n%s", before.Restore(nil), after.Restore(nil))
	}
	if len(before.Sets) != 1 || len(before.Sets[0].Entries) != 0 || !after.Sets[0].Entries["10.0.1.1"] {
		t.Errorf("sets before %v, after %v", before.Sets, after.Sets)
	}
}

// TestHostNetworkPodsUnaffected: a policy selecting every pod gives a hostNetwork pod no
// chain and puts it in no set.
func TestHostNetworkPodsUnaffected(t *testing.T) {
	host := statePod("x", "h", "node1", "192.0.2.10", map[string]string{"pod": "b"})
	host.Spec.HostNetwork = true
	np := withIngress(policy("x", "deny", sel(), ingress, egress),
		networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("pod", "b")}}})
	rs := Build(&State{Node: "node1", Pods: []*corev1.Pod{host}, Policies: []*networkingv1.NetworkPolicy{np}})
	if len(rs.Chains) != 3 || strings.Contains(rs.Restore(nil), "192.0.2.10") { // TopChain, InputChain and OutputChain alone
		t.Errorf("hostNetwork pod enforced:\n%s", rs.Restore(nil))
	}
	for _, s := range rs.Sets {
		if len(s.Entries) != 0 {
			t.Errorf("hostNetwork pod in set %s: %v", s.Name, s.Entries)
		}
	}
}

// chainRules are the rules of chain name in rs; nil when rs has no such chain.
func chainRules(rs *Ruleset, name string) []string {
	for _, c := range rs.Chains {
		if c.Name == name {
			return c.Rules
		}
	}
	return nil
}

// TestOutputChainDecidesWhatIPVSTranslated: with IPVS in the kernel, OutputChain takes
// what IPVS translated and sent on (a Service's connection, decided after its translation)
// to the same chains as TopChain: a local pod's egress chain by its source, a local pod's
// ingress chain by its destination; the rest (the node's own traffic, what no IPVS
// translated) returns before. Without IPVS it holds the replies' rule alone, so iptables
// mode decides in FORWARD and INPUT as before.
func TestOutputChainDecidesWhatIPVSTranslated(t *testing.T) {
	client := statePod("x", "a", "node1", "10.0.0.1", map[string]string{"pod": "a"})
	server := statePod("x", "b", "node1", "10.0.0.2", map[string]string{"pod": "b"})
	remote := statePod("x", "r", "node2", "10.0.1.1", map[string]string{"pod": "b"})
	s := &State{Node: "node1", Pods: []*corev1.Pod{client, server, remote}, Policies: []*networkingv1.NetworkPolicy{
		policy("x", "deny-egress", sel("pod", "a"), egress),
		policy("x", "deny-ingress", sel("pod", "b"), ingress),
	}}
	out := chainRules(Build(s), OutputChain)
	if len(out) != 1 || !strings.Contains(out[0], "--ctstate RELATED,ESTABLISHED -j RETURN") {
		t.Errorf("%s without IPVS: %q, want the replies' rule alone", OutputChain, out)
	}
	s.IPVS = true
	rs := Build(s)
	out = chainRules(rs, OutputChain)
	want := []string{
		`-m comment --comment "replies of allowed connections" -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN`,
		`-m comment --comment "what IPVS did not translate" -m ipvs ! --ipvs -j RETURN`,
		`-m comment --comment "IPVS replies" -m ipvs --vdir REPLY -j RETURN`,
		`-s 10.0.0.1/32 -m comment --comment "x/a egress" -j ` + ChainName(client, egress),
		`-d 10.0.0.2/32 -m comment --comment "x/b ingress" -j ` + ChainName(server, ingress),
	}
	if !slices.Equal(out, want) {
		t.Errorf("%s with IPVS:\n%s\nwant\n%s", OutputChain, strings.Join(out, "\n"), strings.Join(want, "\n"))
	}
	// The same jumps as TopChain's, after the same replies' rule.
	if top := chainRules(rs, TopChain); !slices.Equal(top, append(want[:1:1], want[3:]...)) {
		t.Errorf("%s: %q", TopChain, top)
	}
	// The ingress chain returns the node's own connections (a node process's connection to
	// a Service whose endpoint is x/b) first.
	if in := chainRules(rs, ChainName(server, ingress)); len(in) == 0 || !strings.Contains(in[0], "--src-type LOCAL -j RETURN") {
		t.Errorf("x/b's ingress chain does not return the node's own connections first: %q", in)
	}
}

// TestNodePortsPassInputUntranslated: the Services' node ports pass InputChain before the
// pods' egress jumps, unless a DNAT translated them (iptables mode: decided there on the
// endpoint, as before); in IPVS mode they reach INPUT untranslated and are decided in
// OutputChain after IPVS. Their sets hold the ports, one per protocol that has any.
func TestNodePortsPassInputUntranslated(t *testing.T) {
	client := statePod("x", "a", "node1", "10.0.0.1", map[string]string{"pod": "a"})
	s := &State{Node: "node1", Pods: []*corev1.Pod{client}, Policies: []*networkingv1.NetworkPolicy{policy("x", "deny", sel("pod", "a"), egress)},
		ServiceCIDRs: []string{"10.96.0.0/12"}, IPVS: true,
		NodePorts: map[corev1.Protocol][]int32{corev1.ProtocolTCP: {30080, 30443}, corev1.ProtocolSCTP: {30999}}}
	rs := Build(s)
	input := chainRules(rs, InputChain)
	want := []string{
		`-p tcp -m set --match-set MKNP-NODE-PORTS-TCP dst -m conntrack ! --ctstate DNAT -m comment --comment "node ports: decided after their translation" -j RETURN`,
		`-p sctp -m set --match-set MKNP-NODE-PORTS-SCTP dst -m conntrack ! --ctstate DNAT -m comment --comment "node ports: decided after their translation" -j RETURN`,
		`-s 10.0.0.1/32 -m comment --comment "x/a egress" -j ` + ChainName(client, egress),
	}
	if len(input) != 5 || !slices.Equal(input[2:], want) {
		t.Errorf("%s:\n%s\nwant after the replies and the Service range\n%s", InputChain, strings.Join(input, "\n"), strings.Join(want, "\n"))
	}
	sets := map[string]string{}
	for _, set := range rs.Sets {
		if strings.HasPrefix(set.Name, NodePortSet("")) {
			sets[set.Name] = fmt.Sprintf("%s %v", set.Type, slices.Sorted(maps.Keys(set.Entries)))
		}
	}
	if want := map[string]string{NodePortSet(corev1.ProtocolTCP): "bitmap:port [30080 30443]", NodePortSet(corev1.ProtocolSCTP): "bitmap:port [30999]"}; !maps.Equal(sets, want) {
		t.Errorf("node port sets %v, want %v", sets, want)
	}
	// From the Services: node ports by protocol, once each, sorted.
	svc := func(ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Ports: ports}}
	}
	got := nodePorts([]*corev1.Service{
		svc(corev1.ServicePort{Protocol: corev1.ProtocolTCP, NodePort: 30443}, corev1.ServicePort{Protocol: corev1.ProtocolUDP, NodePort: 30053}),
		svc(corev1.ServicePort{Protocol: corev1.ProtocolTCP, Port: 80}),
		svc(corev1.ServicePort{Protocol: corev1.ProtocolTCP, NodePort: 30080}, corev1.ServicePort{Protocol: corev1.ProtocolTCP, NodePort: 30443}),
	})
	if fmt.Sprint(got) != "map[TCP:[30080 30443] UDP:[30053]]" {
		t.Errorf("nodePorts: %v", got)
	}
}
