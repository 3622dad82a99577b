package policy

import (
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
)

// The admin tiers of sigs.k8s.io/network-policy-api around the NetworkPolicies of a pod's
// chain: AdminNetworkPolicies first, by priority (lower number first), whose Allow returns,
// Deny drops and Pass goes to the NetworkPolicy tier; then the NetworkPolicies as ever; then,
// for a pod no NetworkPolicy isolates, the BaselineAdminNetworkPolicy's Allow and Deny.
// Admin peers and ports are written as NetworkPolicy peers and ports, so the same entries
// (ipsets, port matches, explain) serve all three tiers; an egress peer selecting nodes is a
// set of the selected Nodes' addresses. A domainNames peer (an Extended feature this
// enforcement lacks: it needs a DNS proxy) matches nothing, and the policy's status says so
// (status.go).

const (
	// KindANP and KindBANP are the Kind of a RuleRef to an admin policy's rule.
	KindANP  = "AdminNetworkPolicy"
	KindBANP = "BaselineAdminNetworkPolicy"
	// BaselineName is the one name a BaselineAdminNetworkPolicy may have.
	BaselineName = "default"
)

// adminRule is one ingress or egress rule of an admin policy with its peers and ports as a
// NetworkPolicy's.
type adminRule struct {
	name, action string
	peers        []networkingv1.NetworkPolicyPeer
	nodes        []*metav1.LabelSelector // egress peers selecting nodes, numbered after peers
	ports        []networkingv1.NetworkPolicyPort
}

// adminTier is the entries of the AdminNetworkPolicies whose subject is p, in direction dir;
// their names go to c.adminBy.
func (b *builder) adminTier(p *corev1.Pod, dir networkingv1.PolicyType, c *podChain) []entry {
	anps := append([]*anpv1alpha1.AdminNetworkPolicy(nil), b.state.AdminPolicies...)
	// The spec leaves equal priorities undefined; the name makes the order stable.
	sort.Slice(anps, func(i, j int) bool {
		if anps[i].Spec.Priority != anps[j].Spec.Priority {
			return anps[i].Spec.Priority < anps[j].Spec.Priority
		}
		return anps[i].Name < anps[j].Name
	})
	var out []entry
	for _, anp := range anps {
		if !b.subjectSelects(&anp.Spec.Subject, p) {
			continue
		}
		var rules []adminRule
		if dir == networkingv1.PolicyTypeIngress {
			for _, r := range anp.Spec.Ingress {
				rules = append(rules, adminRule{r.Name, string(r.Action), ingressPeers(r.From), nil, adminPorts(r.Ports)})
			}
		} else {
			for _, r := range anp.Spec.Egress {
				peers, nodes := egressPeers(r.To)
				rules = append(rules, adminRule{r.Name, string(r.Action), peers, nodes, adminPorts(r.Ports)})
			}
		}
		if len(rules) == 0 {
			continue
		}
		c.adminBy = append(c.adminBy, "anp/"+anp.Name)
		prio := anp.Spec.Priority
		ref := RuleRef{Kind: KindANP, Policy: anp.Name, Priority: &prio, Direction: strings.ToLower(string(dir))}
		out = append(out, b.adminEntries(ref, p, dir, rules)...)
	}
	return out
}

// baselineTier is the entries of the BaselineAdminNetworkPolicy if its subject is p.
func (b *builder) baselineTier(p *corev1.Pod, dir networkingv1.PolicyType, c *podChain) []entry {
	banp := b.state.Baseline
	if banp == nil || banp.Name != BaselineName || !b.subjectSelects(&banp.Spec.Subject, p) {
		return nil
	}
	var rules []adminRule
	if dir == networkingv1.PolicyTypeIngress {
		for _, r := range banp.Spec.Ingress {
			rules = append(rules, adminRule{r.Name, string(r.Action), ingressPeers(r.From), nil, adminPorts(r.Ports)})
		}
	} else {
		for _, r := range banp.Spec.Egress {
			var to []anpv1alpha1.AdminNetworkPolicyEgressPeer
			for _, t := range r.To {
				to = append(to, anpv1alpha1.AdminNetworkPolicyEgressPeer{Namespaces: t.Namespaces, Pods: t.Pods, Nodes: t.Nodes, Networks: t.Networks})
			}
			peers, nodes := egressPeers(to)
			rules = append(rules, adminRule{r.Name, string(r.Action), peers, nodes, adminPorts(r.Ports)})
		}
	}
	if len(rules) == 0 {
		return nil
	}
	c.adminBy = append(c.adminBy, "banp/"+banp.Name)
	return b.adminEntries(RuleRef{Kind: KindBANP, Policy: banp.Name, Direction: strings.ToLower(string(dir))}, p, dir, rules)
}

// adminEntries are the entries of rules, ref naming their policy: Allow returns, Deny
// drops, Pass goes to p's NetworkPolicy tier. A rule none of whose peers this enforcement
// can match (domain names) matches nothing.
func (b *builder) adminEntries(ref RuleRef, p *corev1.Pod, dir networkingv1.PolicyType, rules []adminRule) []entry {
	var out []entry
	for i, r := range rules {
		if len(r.peers)+len(r.nodes) == 0 {
			continue
		}
		ref := ref
		ref.Rule, ref.Name, ref.Action = i, r.name, r.action
		target := "-j RETURN"
		switch r.action {
		case string(anpv1alpha1.AdminNetworkPolicyRuleActionDeny):
			target = "-j DROP"
		case string(anpv1alpha1.AdminNetworkPolicyRuleActionPass):
			target = "-g " + tierChainName(p, dir)
		}
		for _, e := range b.peerPortEntries("", ref, p, dir, r.peers, r.nodes, r.ports, target) {
			e.deny = target == "-j DROP"
			e.pass = strings.HasPrefix(target, "-g ")
			out = append(out, e)
		}
	}
	return out
}

// tierChainName is the chain holding pod p's NetworkPolicy and baseline tiers in direction
// dir, where a Pass goes; it exists when a Pass rule applies to p.
func tierChainName(p *corev1.Pod, dir networkingv1.PolicyType) string {
	return chainPrefix + string(dir[0]) + "P-" + hash(p.Namespace, p.Name, string(p.UID))
}

func (b *builder) subjectSelects(s *anpv1alpha1.AdminNetworkPolicySubject, p *corev1.Pod) bool {
	switch {
	case s.Namespaces != nil:
		return b.selects(s.Namespaces, b.nsLabels[p.Namespace])
	case s.Pods != nil:
		return b.selects(&s.Pods.NamespaceSelector, b.nsLabels[p.Namespace]) && b.selects(&s.Pods.PodSelector, p.Labels)
	}
	return false
}

func ingressPeers(from []anpv1alpha1.AdminNetworkPolicyIngressPeer) []networkingv1.NetworkPolicyPeer {
	var out []networkingv1.NetworkPolicyPeer
	for _, f := range from {
		out = append(out, namespacedPeer(f.Namespaces, f.Pods)...)
	}
	return out
}

// egressPeers are to's peers as NetworkPolicy peers, and its node selectors; domain names
// are left out (not enforced: see hasDomainNames).
func egressPeers(to []anpv1alpha1.AdminNetworkPolicyEgressPeer) ([]networkingv1.NetworkPolicyPeer, []*metav1.LabelSelector) {
	var out []networkingv1.NetworkPolicyPeer
	var nodes []*metav1.LabelSelector
	for _, t := range to {
		out = append(out, namespacedPeer(t.Namespaces, t.Pods)...)
		for _, n := range t.Networks {
			out = append(out, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: string(n)}})
		}
		if t.Nodes != nil {
			nodes = append(nodes, t.Nodes)
		}
	}
	return out, nodes
}

// nodeAddresses are the IPv4 InternalIP and ExternalIP addresses (the pod network and the
// sets are IPv4, as ipv4Nets says) of the nodes sel selects.
func (b *builder) nodeAddresses(sel *metav1.LabelSelector) []string {
	var out []string
	for _, n := range b.state.Nodes {
		if !b.selects(sel, n.Labels) {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Unmap().Is4() {
				out = append(out, ip.Unmap().String())
			}
		}
	}
	return out
}

func namespacedPeer(ns *metav1.LabelSelector, pods *anpv1alpha1.NamespacedPod) []networkingv1.NetworkPolicyPeer {
	switch {
	case ns != nil:
		return []networkingv1.NetworkPolicyPeer{{NamespaceSelector: ns}}
	case pods != nil:
		return []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &pods.NamespaceSelector, PodSelector: &pods.PodSelector}}
	}
	return nil
}

// adminPorts are ports as NetworkPolicy ports (nil: any port). A named port has anyProtocol:
// each pod's container port of that name decides, with its own protocol.
func adminPorts(ports *[]anpv1alpha1.AdminNetworkPolicyPort) []networkingv1.NetworkPolicyPort {
	if ports == nil {
		return nil
	}
	var out []networkingv1.NetworkPolicyPort
	for _, p := range *ports {
		switch {
		case p.PortNumber != nil:
			proto, port := p.PortNumber.Protocol, intstr.FromInt32(p.PortNumber.Port)
			out = append(out, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port})
		case p.PortRange != nil:
			proto := p.PortRange.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			start, end := intstr.FromInt32(p.PortRange.Start), p.PortRange.End
			out = append(out, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &start, EndPort: &end})
		case p.NamedPort != nil:
			proto, port := anyProtocol, intstr.FromString(*p.NamedPort)
			out = append(out, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port})
		}
	}
	return out
}
