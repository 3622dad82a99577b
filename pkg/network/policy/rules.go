// Package policy enforces NetworkPolicies for the pods of one node in iptables and ipsets,
// in the style of kube-router's and Calico felix's controllers: every isolated local pod gets
// an ingress and/or egress chain listing what its policies allow (RETURN) and ending in a
// counted DROP; every peer of a rule (pods by selector, an ipBlock) is an ipset, so pods
// coming and going change set members, not rules. Replies of allowed connections pass by
// conntrack, traffic from the node itself passes, hostNetwork pods are never selected.
package policy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/proxy/ipset"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	// TopChain is jumped to from FORWARD; it sends new connections of local pods to their
	// pods' chains.
	TopChain = "MINIK8S-NETPOL"
	// chainPrefix and setPrefix name every chain and set of ours but the top one.
	chainPrefix = "MKNP-"
	setPrefix   = "MKNP-"
	hashIPPort  = ipset.HashIPPort
	hashIP      = ipset.HashIP
	hashNet     = ipset.Type("hash:net")
)

// State is what the rules are computed from: the cluster's pods, namespaces and
// NetworkPolicies, and the node whose pods are enforced.
type State struct {
	Node       string
	Pods       []*corev1.Pod
	Namespaces []*corev1.Namespace
	Policies   []*networkingv1.NetworkPolicy
}

// Ruleset is what one sync writes: the filter table's chains (TopChain first) and the sets
// their rules match.
type Ruleset struct {
	Chains []Chain
	Sets   []*ipset.Set
}

// Chain is one chain of ours and its rules (iptables-restore arguments after "-A NAME").
type Chain struct {
	Name  string
	Rules []string
}

// Restore is the iptables-restore input (for --noflush) declaring (so flushing) every chain
// of rs, filling it, and deleting stale, the chains of ours no longer wanted.
func (rs *Ruleset) Restore(stale []string) string {
	var b strings.Builder
	b.WriteString("*filter\n")
	for _, c := range rs.Chains {
		fmt.Fprintf(&b, ":%s - [0:0]\n", c.Name)
	}
	for _, c := range stale {
		fmt.Fprintf(&b, ":%s - [0:0]\n", c)
	}
	for _, c := range rs.Chains {
		for _, r := range c.Rules {
			fmt.Fprintf(&b, "-A %s %s\n", c.Name, r)
		}
	}
	for _, c := range stale {
		fmt.Fprintf(&b, "-X %s\n", c)
	}
	b.WriteString("COMMIT\n")
	return b.String()
}

// Build computes the ruleset of s.
func Build(s *State) *Ruleset {
	b := &builder{state: s, sets: map[string]*ipset.Set{}, nsLabels: map[string]labels.Set{}}
	for _, ns := range s.Namespaces {
		b.nsLabels[ns.Name] = ns.Labels
	}
	for _, p := range s.Pods {
		if podIP(p) != "" {
			b.peers = append(b.peers, p)
		}
	}
	sort.Slice(s.Policies, func(i, j int) bool {
		a, c := s.Policies[i], s.Policies[j]
		return a.Namespace+"/"+a.Name < c.Namespace+"/"+c.Name
	})
	top := Chain{Name: TopChain, Rules: []string{
		`-m comment --comment "replies of allowed connections" -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN`,
	}}
	var egress, ingress []string
	var chains []Chain
	for _, p := range b.peers {
		if p.Spec.NodeName != s.Node {
			continue
		}
		ip := podIP(p)
		for _, dir := range []networkingv1.PolicyType{networkingv1.PolicyTypeEgress, networkingv1.PolicyTypeIngress} {
			c, ok := b.podChain(p, dir)
			if !ok {
				continue
			}
			chains = append(chains, c)
			if dir == networkingv1.PolicyTypeEgress {
				egress = append(egress, fmt.Sprintf(`-s %s/32 -m comment --comment "%s/%s egress" -j %s`, ip, p.Namespace, p.Name, c.Name))
			} else {
				ingress = append(ingress, fmt.Sprintf(`-d %s/32 -m comment --comment "%s/%s ingress" -j %s`, ip, p.Namespace, p.Name, c.Name))
			}
		}
	}
	// Egress of the source first, then ingress of the destination: a connection between
	// two local pods must pass both.
	top.Rules = append(append(top.Rules, egress...), ingress...)
	rs := &Ruleset{Chains: append([]Chain{top}, chains...)}
	names := make([]string, 0, len(b.sets))
	for n := range b.sets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rs.Sets = append(rs.Sets, b.sets[n])
	}
	return rs
}

type builder struct {
	state    *State
	peers    []*corev1.Pod // pods with an IP that peers may select (hostNetwork ones left out)
	nsLabels map[string]labels.Set
	sets     map[string]*ipset.Set
}

// podChain is the chain of pod p in one direction, when some policy isolates p in it.
func (b *builder) podChain(p *corev1.Pod, dir networkingv1.PolicyType) (Chain, bool) {
	c := Chain{Name: chainPrefix + string(dir[0]) + "-" + hash(p.Namespace, p.Name, string(p.UID))}
	isolated := false
	for _, np := range b.state.Policies {
		if np.Namespace != p.Namespace || !hasType(np, dir) || !selects(&np.Spec.PodSelector, p.Labels) {
			continue
		}
		isolated = true
		if dir == networkingv1.PolicyTypeIngress {
			for i, r := range np.Spec.Ingress {
				c.Rules = append(c.Rules, b.ruleLines(np, p, dir, i, r.From, r.Ports)...)
			}
		} else {
			for i, r := range np.Spec.Egress {
				c.Rules = append(c.Rules, b.ruleLines(np, p, dir, i, r.To, r.Ports)...)
			}
		}
	}
	if !isolated {
		return c, false
	}
	if dir == networkingv1.PolicyTypeIngress {
		// The node itself (probes, kubectl port-forward's dial) may always reach its pods.
		c.Rules = append([]string{`-m comment --comment "from the node itself" -m addrtype --src-type LOCAL -j RETURN`}, c.Rules...)
	}
	c.Rules = append(c.Rules, fmt.Sprintf(`-m comment --comment "%s/%s %s denied" -j DROP`, p.Namespace, p.Name, strings.ToLower(string(dir))))
	return c, true
}

// ruleLines are the RETURN rules of one ingress (peers = from) or egress (peers = to) rule
// of np, for pod p: any peer with any port.
func (b *builder) ruleLines(np *networkingv1.NetworkPolicy, p *corev1.Pod, dir networkingv1.PolicyType, idx int, peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort) []string {
	comment := fmt.Sprintf(`-m comment --comment "%s/%s %s rule %d"`, np.Namespace, np.Name, strings.ToLower(string(dir)), idx)
	side := "src"
	if dir == networkingv1.PolicyTypeEgress {
		side = "dst"
	}
	ruleID := func(parts ...string) string {
		return hash(append([]string{np.Namespace, np.Name, string(dir), strconv.Itoa(idx)}, parts...)...)
	}
	// Peer matches: "" is any address.
	peerMatches := []string{""}
	var peerPods [][]*corev1.Pod // per pod-selecting peer, for named egress ports
	if len(peers) > 0 {
		peerMatches = nil
		for j := range peers {
			peer := &peers[j]
			if peer.IPBlock != nil {
				set := b.set(ruleID("peer", strconv.Itoa(j)), hashNet, fmt.Sprintf("%s/%s %s rule %d peer %d", np.Namespace, np.Name, dir, idx, j))
				for _, n := range ipv4Nets(peer.IPBlock.CIDR) {
					set.Add(n)
				}
				for _, e := range peer.IPBlock.Except {
					for _, n := range ipv4Nets(e) {
						set.Add(n + " nomatch")
					}
				}
				peerMatches = append(peerMatches, fmt.Sprintf("-m set --match-set %s %s", set.Name, side))
				continue
			}
			selected := b.selectPeers(np.Namespace, peer)
			peerPods = append(peerPods, selected)
			set := b.set(ruleID("peer", strconv.Itoa(j)), hashIP, fmt.Sprintf("%s/%s %s rule %d peer %d", np.Namespace, np.Name, dir, idx, j))
			for _, pod := range selected {
				set.Add(podIP(pod))
			}
			peerMatches = append(peerMatches, fmt.Sprintf("-m set --match-set %s %s", set.Name, side))
		}
	} else {
		peerPods = [][]*corev1.Pod{b.peers}
	}
	if len(ports) == 0 {
		var out []string
		for _, m := range peerMatches {
			out = append(out, join(m, comment, "-j RETURN"))
		}
		return out
	}
	var out []string
	for k, port := range ports {
		proto := strings.ToLower(string(protocolOf(port)))
		if port.Port != nil && port.Port.Type == intstr.String {
			if dir == networkingv1.PolicyTypeIngress {
				// The destination is p: its own container port of that name.
				if n := namedPort(p, port.Port.StrVal, protocolOf(port)); n != 0 {
					for _, m := range peerMatches {
						out = append(out, join(m, fmt.Sprintf("-p %s --dport %d", proto, n), comment, "-j RETURN"))
					}
				}
				continue
			}
			// Egress to a named port: each peer pod's own port of that name, one ip,port set.
			set := b.set(ruleID("port", strconv.Itoa(k)), hashIPPort, fmt.Sprintf("%s/%s egress rule %d port %s", np.Namespace, np.Name, idx, port.Port.StrVal))
			for _, pods := range peerPods {
				for _, pod := range pods {
					if n := namedPort(pod, port.Port.StrVal, protocolOf(port)); n != 0 {
						set.Add(ipset.IPPort(podIP(pod), proto, n))
					}
				}
			}
			out = append(out, join(fmt.Sprintf("-p %s -m set --match-set %s dst,dst", proto, set.Name), comment, "-j RETURN"))
			continue
		}
		pm := "-p " + proto
		if port.Port != nil {
			pm += " --dport " + strconv.Itoa(port.Port.IntValue())
			if port.EndPort != nil && *port.EndPort > port.Port.IntVal {
				pm += ":" + strconv.Itoa(int(*port.EndPort))
			}
		}
		for _, m := range peerMatches {
			out = append(out, join(m, pm, comment, "-j RETURN"))
		}
	}
	return out
}

// selectPeers lists the pods a pod/namespace selector peer of a policy in ns selects.
func (b *builder) selectPeers(ns string, peer *networkingv1.NetworkPolicyPeer) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range b.peers {
		if peer.NamespaceSelector == nil {
			if pod.Namespace != ns {
				continue
			}
		} else if !selects(peer.NamespaceSelector, b.nsLabels[pod.Namespace]) {
			continue
		}
		if peer.PodSelector != nil && !selects(peer.PodSelector, pod.Labels) {
			continue
		}
		out = append(out, pod)
	}
	return out
}

func (b *builder) set(id string, typ ipset.Type, comment string) *ipset.Set {
	name := setPrefix + string(typ[5]) + "-" + id
	if s, ok := b.sets[name]; ok {
		return s
	}
	s := ipset.New(name, typ, comment)
	b.sets[name] = s
	return s
}

// ipv4Nets is cidr as hash:net entries: none for an IPv6 one (the pod network is IPv4, and an
// inet set refuses it), and 0.0.0.0/0, which hash:net cannot hold, as its two halves.
func ipv4Nets(cidr string) []string {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Unmap().Is4() {
		return nil
	}
	if p.Bits() == 0 {
		return []string{"0.0.0.0/1", "128.0.0.0/1"}
	}
	return []string{p.Masked().String()}
}

// podIP is the address policies see of a pod: none for hostNetwork pods (policies do not
// apply to them) and for pods that ended.
func podIP(p *corev1.Pod) string {
	if p.Spec.HostNetwork || p.Status.PodIP == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return ""
	}
	return p.Status.PodIP
}

func namedPort(p *corev1.Pod, name string, proto corev1.Protocol) int32 {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			pp := cp.Protocol
			if pp == "" {
				pp = corev1.ProtocolTCP
			}
			if cp.Name == name && pp == proto {
				return cp.ContainerPort
			}
		}
	}
	return 0
}

func protocolOf(p networkingv1.NetworkPolicyPort) corev1.Protocol {
	if p.Protocol == nil {
		return corev1.ProtocolTCP
	}
	return *p.Protocol
}

// hasType tells whether np applies in direction dir, defaulting policyTypes as the API does.
func hasType(np *networkingv1.NetworkPolicy, dir networkingv1.PolicyType) bool {
	if len(np.Spec.PolicyTypes) == 0 {
		return dir == networkingv1.PolicyTypeIngress || len(np.Spec.Egress) > 0
	}
	for _, t := range np.Spec.PolicyTypes {
		if t == dir {
			return true
		}
	}
	return false
}

// selects reports whether sel matches set; an invalid selector matches nothing.
func selects(sel *metav1.LabelSelector, set labels.Set) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(set)
}

func hash(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return base32.StdEncoding.EncodeToString(sum[:10])
}

func join(parts ...string) string {
	var nonEmpty []string
	for _, p := range parts {
		if p != "" {
			nonEmpty = append(nonEmpty, p)
		}
	}
	return strings.Join(nonEmpty, " ")
}
