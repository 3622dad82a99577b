package policytest

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
)

// The admin tiers' cases: AdminNetworkPolicies by priority before the NetworkPolicies, the
// BaselineAdminNetworkPolicy after them, as the network-policy-api spec orders them.

const (
	allow = anpv1alpha1.AdminNetworkPolicyRuleActionAllow
	deny  = anpv1alpha1.AdminNetworkPolicyRuleActionDeny
	pass  = anpv1alpha1.AdminNetworkPolicyRuleActionPass
)

// ANP is an AdminNetworkPolicy of priority prio whose subject is the namespaces sel selects.
func ANP(name string, prio int32, sel *metav1.LabelSelector) *anpv1alpha1.AdminNetworkPolicy {
	return &anpv1alpha1.AdminNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: anpv1alpha1.AdminNetworkPolicySpec{Priority: prio, Subject: anpv1alpha1.AdminNetworkPolicySubject{Namespaces: sel}}}
}

// FromNamespaces is an ingress rule with action from the namespaces sel selects.
func FromNamespaces(action anpv1alpha1.AdminNetworkPolicyRuleAction, sel *metav1.LabelSelector, ports ...anpv1alpha1.AdminNetworkPolicyPort) anpv1alpha1.AdminNetworkPolicyIngressRule {
	r := anpv1alpha1.AdminNetworkPolicyIngressRule{Action: action, From: []anpv1alpha1.AdminNetworkPolicyIngressPeer{{Namespaces: sel}}}
	if len(ports) > 0 {
		r.Ports = &ports
	}
	return r
}

// Baseline is the BaselineAdminNetworkPolicy whose subject is the namespaces sel selects.
func Baseline(sel *metav1.LabelSelector, in ...anpv1alpha1.BaselineAdminNetworkPolicyIngressRule) *anpv1alpha1.BaselineAdminNetworkPolicy {
	return &anpv1alpha1.BaselineAdminNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: anpv1alpha1.BaselineAdminNetworkPolicySpec{Subject: anpv1alpha1.AdminNetworkPolicySubject{Namespaces: sel}, Ingress: in}}
}

func pods(ns, pod *metav1.LabelSelector) *anpv1alpha1.NamespacedPod {
	return &anpv1alpha1.NamespacedPod{NamespaceSelector: *ns, PodSelector: *pod}
}

// AdminCases are the admin tiers' cases; ip gives a pod's address by key.
func AdminCases(ip func(key string) string) []Case {
	tcp := corev1.ProtocolTCP
	allIngress := func(ns string) *networkingv1.NetworkPolicy {
		return WithIngress(Policy(ns, "allow-all", Sel(), Ingress), networkingv1.NetworkPolicyIngressRule{})
	}
	fromNS := func(ns, target, from string) *networkingv1.NetworkPolicy {
		return WithIngress(Policy(ns, "from-"+from, Sel("pod", target), Ingress),
			networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: Sel("ns", from)}}})
	}
	prioAllow := ANP("z-allow-y-a", 5, Sel("ns", "x"))
	prioAllow.Spec.Ingress = []anpv1alpha1.AdminNetworkPolicyIngressRule{{Name: "y/a", Action: allow,
		From: []anpv1alpha1.AdminNetworkPolicyIngressPeer{{Pods: pods(Sel("ns", "y"), Sel("pod", "a"))}}}}
	prioDeny := ANP("a-deny-y", 50, Sel("ns", "x"))
	prioDeny.Spec.Ingress = []anpv1alpha1.AdminNetworkPolicyIngressRule{FromNamespaces(deny, Sel("ns", "y"))}
	denyY := ANP("deny-y", 10, Sel("ns", "x"))
	denyY.Spec.Ingress = []anpv1alpha1.AdminNetworkPolicyIngressRule{FromNamespaces(deny, Sel("ns", "y"))}
	passY := ANP("pass-y", 10, Sel("ns", "x"))
	passY.Spec.Ingress = []anpv1alpha1.AdminNetworkPolicyIngressRule{FromNamespaces(pass, Sel("ns", "y"))}
	denyYLater := ANP("deny-y-later", 20, Sel("ns", "x"))
	denyYLater.Spec.Ingress = []anpv1alpha1.AdminNetworkPolicyIngressRule{FromNamespaces(deny, Sel("ns", "y"))}
	egressDeny := &anpv1alpha1.AdminNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "y-b-not-to-z-nor-x-c"},
		Spec: anpv1alpha1.AdminNetworkPolicySpec{Priority: 10, Subject: anpv1alpha1.AdminNetworkPolicySubject{Pods: pods(Sel("ns", "y"), Sel("pod", "b"))},
			Egress: []anpv1alpha1.AdminNetworkPolicyEgressRule{{Action: deny, To: []anpv1alpha1.AdminNetworkPolicyEgressPeer{
				{Namespaces: Sel("ns", "z")}, {Networks: []anpv1alpha1.CIDR{anpv1alpha1.CIDR(ip("x/c") + "/32")}}}}}}}
	tcp80Only := ANP("deny-tcp-80-udp-81-90", 10, Sel("ns", "x"))
	tcp80Only.Spec.Ingress = []anpv1alpha1.AdminNetworkPolicyIngressRule{FromNamespaces(deny, Sel(),
		anpv1alpha1.AdminNetworkPolicyPort{PortNumber: &anpv1alpha1.Port{Protocol: tcp, Port: 80}},
		anpv1alpha1.AdminNetworkPolicyPort{PortRange: &anpv1alpha1.PortRange{Protocol: corev1.ProtocolUDP, Start: 81, End: 90}})}
	zAllowYPass := ANP("z-allow-y-pass", 1, Sel("ns", "x"))
	zAllowYPass.Spec.Ingress = []anpv1alpha1.AdminNetworkPolicyIngressRule{FromNamespaces(allow, Sel("ns", "z")), FromNamespaces(pass, Sel("ns", "y"))}
	denyAllIntoX := Baseline(Sel("ns", "x"), anpv1alpha1.BaselineAdminNetworkPolicyIngressRule{Action: anpv1alpha1.BaselineAdminNetworkPolicyRuleActionDeny,
		From: []anpv1alpha1.AdminNetworkPolicyIngressPeer{{Namespaces: Sel()}}})
	denyAll := Baseline(Sel(), anpv1alpha1.BaselineAdminNetworkPolicyIngressRule{Action: anpv1alpha1.BaselineAdminNetworkPolicyRuleActionDeny,
		From: []anpv1alpha1.AdminNetworkPolicyIngressPeer{{Namespaces: Sel()}}})
	onlyTCP80 := func(r Reachability) map[Probe]Reachability { return map[Probe]Reachability{TCP80: r} }
	return []Case{
		{Name: "ANP deny beats an allowing NetworkPolicy",
			Policies: []*networkingv1.NetworkPolicy{allIngress("x")}, AdminPolicies: []*anpv1alpha1.AdminNetworkPolicy{denyY},
			Expect: onlyTCP80(Matrix(true).Set("y/*", "x/*", false))},
		// y passes to x's NetworkPolicy, which isolates x/a (z only) and not x/b, x/c.
		{Name: "ANP pass hands to the NetworkPolicies, skipping a later deny",
			Policies: []*networkingv1.NetworkPolicy{fromNS("x", "a", "z")}, AdminPolicies: []*anpv1alpha1.AdminNetworkPolicy{passY, denyYLater},
			Expect: onlyTCP80(Matrix(true).Set("*/*", "x/a", false).Set("z/*", "x/a", true))},
		{Name: "ANP priority: a lower number first, whatever the names",
			AdminPolicies: []*anpv1alpha1.AdminNetworkPolicy{prioDeny, prioAllow},
			Expect:        onlyTCP80(Matrix(true).Set("y/*", "x/*", false).Set("y/a", "x/*", true))},
		{Name: "BANP deny as the default, a NetworkPolicy overriding it",
			Policies: []*networkingv1.NetworkPolicy{fromNS("x", "a", "z")}, Baseline: denyAll,
			Expect: onlyTCP80(Matrix(false).Set("z/*", "x/a", true))},
		{Name: "ANP egress deny to namespaces and a network",
			AdminPolicies: []*anpv1alpha1.AdminNetworkPolicy{egressDeny},
			Expect:        onlyTCP80(Matrix(true).Set("y/b", "z/*", false).Set("y/b", "x/c", false))},
		{Name: "ANP deny scoped to TCP 80 and a UDP range",
			AdminPolicies: []*anpv1alpha1.AdminNetworkPolicy{tcp80Only},
			Expect: map[Probe]Reachability{TCP80: Matrix(true).Set("*/*", "x/*", false), TCP81: Matrix(true),
				UDP80: Matrix(true), UDP81: Matrix(true).Set("*/*", "x/*", false)}},
		{Name: "ANP allow and pass, then the BANP denies what passed",
			AdminPolicies: []*anpv1alpha1.AdminNetworkPolicy{zAllowYPass}, Baseline: denyAllIntoX,
			Expect: onlyTCP80(Matrix(true).Set("*/*", "x/*", false).Set("z/*", "x/*", true))},
	}
}
