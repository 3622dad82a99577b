package policy

import (
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
	if len(rs.Chains) != 2 || strings.Contains(rs.Restore(nil), "192.0.2.10") { // TopChain and InputChain alone
		t.Errorf("hostNetwork pod enforced:\n%s", rs.Restore(nil))
	}
	for _, s := range rs.Sets {
		if len(s.Entries) != 0 {
			t.Errorf("hostNetwork pod in set %s: %v", s.Name, s.Entries)
		}
	}
}
