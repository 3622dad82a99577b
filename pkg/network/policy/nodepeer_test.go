package policy

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
	anpfake "sigs.k8s.io/network-policy-api/pkg/client/clientset/versioned/fake"
)

func stateNode(name string, labels map[string]string, addrs ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{Addresses: addrs}}
}

// nodePeerState: x/a on node1 under an ANP denying its egress to the nodes labelled
// role=infra, node2 (InternalIP, ExternalIP, an IPv6 InternalIP and a Hostname) being one
// and node3 not.
func nodePeerState() (*State, *corev1.Pod) {
	xa := statePod("x", "a", "node1", "10.0.0.1", map[string]string{"pod": "a"})
	anp := &anpv1alpha1.AdminNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "no-infra"},
		Spec: anpv1alpha1.AdminNetworkPolicySpec{Priority: 3, Subject: anpv1alpha1.AdminNetworkPolicySubject{Namespaces: sel("ns", "x")},
			Egress: []anpv1alpha1.AdminNetworkPolicyEgressRule{{Name: "infra", Action: anpv1alpha1.AdminNetworkPolicyRuleActionDeny,
				To: []anpv1alpha1.AdminNetworkPolicyEgressPeer{{Nodes: sel("role", "infra")}}}}}}
	return &State{Node: "node1", Pods: []*corev1.Pod{xa}, Namespaces: matrixNamespaces(),
		AdminPolicies: []*anpv1alpha1.AdminNetworkPolicy{anp},
		Nodes: []*corev1.Node{
			stateNode("node2", map[string]string{"role": "infra"},
				corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.168.0.2"},
				corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.2"},
				corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::2"},
				corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node2"}),
			stateNode("node3", map[string]string{"role": "worker"}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.168.0.3"}),
		}}, xa
}

// TestNodePeerIsASetOfNodeAddresses: an ANP egress peer selecting nodes is a Deny rule
// matching a set of the selected nodes' IPv4 InternalIP and ExternalIP; a node's label
// change changes the set's members and leaves the rules as they were.
func TestNodePeerIsASetOfNodeAddresses(t *testing.T) {
	s, xa := nodePeerState()
	rs := Build(s)
	var rule string
	for _, c := range rs.Chains {
		if c.Name == ChainName(xa, egress) {
			for _, r := range c.Rules {
				if strings.Contains(r, "anp/no-infra egress rule 0") {
					rule = r
				}
			}
		}
	}
	if !strings.Contains(rule, "-m set --match-set ") || !strings.HasSuffix(rule, "-j DROP") {
		t.Fatalf("no DROP of a node set in x/a's egress chain:\n%s", rs.Restore(nil))
	}
	set := rs.Sets[0]
	if len(rs.Sets) != 1 || !strings.Contains(rule, set.Name+" dst") || len(set.Entries) != 2 || !set.Entries["192.168.0.2"] || !set.Entries["203.0.113.2"] {
		t.Fatalf("node set %v, want node2's 192.168.0.2 and 203.0.113.2", rs.Sets)
	}
	s.Nodes[1] = s.Nodes[1].DeepCopy()
	s.Nodes[1].Labels["role"] = "infra"
	after := Build(s)
	if after.Restore(nil) != rs.Restore(nil) {
		t.Errorf("rules changed with a node's label:\n%s\n%s", rs.Restore(nil), after.Restore(nil))
	}
	if e := after.Sets[0].Entries; len(e) != 3 || !e["192.168.0.3"] {
		t.Errorf("after node3 labelled role=infra: %v", e)
	}
}

// TestBaselineNodePeer: the BaselineAdminNetworkPolicy's node peers are enforced too.
func TestBaselineNodePeer(t *testing.T) {
	s, xa := nodePeerState()
	s.AdminPolicies = nil
	s.Baseline = &anpv1alpha1.BaselineAdminNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: BaselineName},
		Spec: anpv1alpha1.BaselineAdminNetworkPolicySpec{Subject: anpv1alpha1.AdminNetworkPolicySubject{Namespaces: sel()},
			Egress: []anpv1alpha1.BaselineAdminNetworkPolicyEgressRule{{Action: anpv1alpha1.BaselineAdminNetworkPolicyRuleActionDeny,
				To: []anpv1alpha1.BaselineAdminNetworkPolicyEgressPeer{{Nodes: sel()}}}}}}
	v := Decide(s, xa, egress, Connection{Src: "10.0.0.1", Dst: "192.168.0.3", Protocol: corev1.ProtocolTCP, Port: 22, SrcName: "x/a"})
	if v.Allowed || v.By == nil || v.By.Kind != KindBANP {
		t.Errorf("x/a -> node3 under a baseline denying every node: %+v", v)
	}
	if v := Decide(s, xa, egress, Connection{Src: "10.0.0.1", Dst: "10.0.0.9", Protocol: corev1.ProtocolTCP, Port: 80}); !v.Allowed {
		t.Errorf("x/a -> a pod: %+v", v)
	}
}

// TestNodePeerVerdictNamesTheRule: explain names the node peer's rule, and only the
// selected nodes' addresses are denied.
func TestNodePeerVerdictNamesTheRule(t *testing.T) {
	s, xa := nodePeerState()
	v := Decide(s, xa, egress, Connection{Src: "10.0.0.1", Dst: "203.0.113.2", Protocol: corev1.ProtocolTCP, Port: 443, SrcName: "x/a"})
	want := `denied by AdminNetworkPolicy anp/no-infra egress rule 0 (priority 3) "infra" Deny (to NodeSelector: role=infra, on any port)`
	if v.Allowed || v.Reason != want || v.By.Peer != 0 {
		t.Errorf("x/a -> node2's ExternalIP: %+v, want %q", v, want)
	}
	if v := Decide(s, xa, egress, Connection{Src: "10.0.0.1", Dst: "192.168.0.3", Protocol: corev1.ProtocolTCP, Port: 443}); !v.Allowed {
		t.Errorf("x/a -> node3 (not role=infra): %+v", v)
	}
}

// TestDomainNamesReported: an ANP with domainNames peers, which this enforcement cannot
// match, gets a False condition saying so; the condition goes when the peers go, and an
// ANP without them is not written.
func TestDomainNamesReported(t *testing.T) {
	ctx := context.Background()
	withDomains := &anpv1alpha1.AdminNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "to-k8s-io", Generation: 2},
		Spec: anpv1alpha1.AdminNetworkPolicySpec{Priority: 1, Subject: anpv1alpha1.AdminNetworkPolicySubject{Namespaces: sel()},
			Egress: []anpv1alpha1.AdminNetworkPolicyEgressRule{{Action: anpv1alpha1.AdminNetworkPolicyRuleActionAllow,
				To: []anpv1alpha1.AdminNetworkPolicyEgressPeer{{DomainNames: []anpv1alpha1.DomainName{"kubernetes.io"}}}}}}}
	plain := &anpv1alpha1.AdminNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	client := anpfake.NewSimpleClientset(withDomains, plain)
	anps := client.PolicyV1alpha1().AdminNetworkPolicies()
	tried := map[string]int64{}
	if errs := reportUnsupported(ctx, anps, []*anpv1alpha1.AdminNetworkPolicy{withDomains, plain}, tried); errs != nil {
		t.Fatal(errs)
	}
	got, err := anps.Get(ctx, "to-k8s-io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, ConditionDomainNames)
	if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != 2 {
		t.Fatalf("conditions %+v, want %s False", got.Status.Conditions, ConditionDomainNames)
	}
	writes := len(client.Actions())
	if errs := reportUnsupported(ctx, anps, []*anpv1alpha1.AdminNetworkPolicy{got, plain}, tried); errs != nil || len(client.Actions()) != writes {
		t.Errorf("reported again: %v, %d actions after %d", errs, len(client.Actions()), writes)
	}
	got.Spec.Egress[0].To[0] = anpv1alpha1.AdminNetworkPolicyEgressPeer{Networks: []anpv1alpha1.CIDR{"192.0.2.0/24"}}
	got.Generation = 3
	if errs := reportUnsupported(ctx, anps, []*anpv1alpha1.AdminNetworkPolicy{got}, tried); errs != nil {
		t.Fatal(errs)
	}
	if got, _ = anps.Get(ctx, "to-k8s-io", metav1.GetOptions{}); meta.FindStatusCondition(got.Status.Conditions, ConditionDomainNames) != nil {
		t.Errorf("condition left after the domainNames went: %+v", got.Status.Conditions)
	}
	// A deleted policy's tried write is forgotten: the map holds only the policies there are.
	if errs := reportUnsupported(ctx, anps, nil, tried); errs != nil || len(tried) != 0 {
		t.Errorf("after every policy went: errors %v, tried %v, want none", errs, tried)
	}
}

// TestNodeHeartbeatsNoSync: of a node, only what node peers read is cached, and only a
// change of it (labels, addresses) makes a sync; a status heartbeat does not.
func TestNodeHeartbeatsNoSync(t *testing.T) {
	n := stateNode("node2", map[string]string{"role": "infra"}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.168.0.2"})
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}}}
	cached, err := nodePeerFields(n)
	if err != nil {
		t.Fatal(err)
	}
	if c := cached.(*corev1.Node); c.Name != "node2" || c.Labels["role"] != "infra" || len(c.Status.Addresses) != 1 || c.Status.Images != nil || c.Status.Conditions != nil {
		t.Errorf("cached %+v", c)
	}
	beat := n.DeepCopy()
	beat.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
	if !sameToNodePeers(n, beat) {
		t.Error("a heartbeat makes a sync")
	}
	relabelled := n.DeepCopy()
	relabelled.Labels["role"] = "worker"
	readdressed := n.DeepCopy()
	readdressed.Status.Addresses[0].Address = "192.168.0.20"
	if sameToNodePeers(n, relabelled) || sameToNodePeers(n, readdressed) {
		t.Error("a label or address change makes no sync")
	}
}
