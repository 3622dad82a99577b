// Package policy enforces NetworkPolicies for the pods of one node in iptables and ipsets,
// in the style of kube-router's and Calico felix's controllers: every isolated local pod gets
// an ingress and/or egress chain listing what its policies allow (RETURN) and ending in a
// counted DROP; every peer of a rule (pods by selector, an ipBlock) is an ipset, so pods
// coming and going change set members, not rules. Replies of allowed connections pass by
// conntrack, traffic from the node itself passes, hostNetwork pods are never selected.
// A pod's egress chain sees its connections to other hosts and pods (FORWARD) and to its
// own node (INPUT), so the node is a destination like any other.
// AdminNetworkPolicies and the BaselineAdminNetworkPolicy are tiers before and after the
// NetworkPolicies in the same chains (admin.go).
package policy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/proxy/ipset"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
)

const (
	// TopChain is jumped to from FORWARD; it sends new connections of local pods to their
	// pods' chains.
	TopChain = "MINIK8S-NETPOL"
	// InputChain is jumped to from INPUT: a local pod's connections to its own node (its
	// addresses, hostNetwork pods and node ports there, a Service endpoint there after the
	// DNAT) never cross FORWARD. It sends them to the pod's egress chain, as kube-router's
	// KUBE-ROUTER-INPUT does; the node's own traffic and other hosts' never match its jumps.
	// Connections to the Service ranges pass it: miniproxy's IPVS mode binds every cluster
	// IP to the node (kube-ipvs0), so they reach INPUT before IPVS translates them (at a
	// later priority of the same hook), and a rule allowing the Service's pods would not
	// match the cluster IP; kube-router lets the range through in INPUT the same way. In
	// iptables mode no connection to a cluster IP reaches INPUT (DNAT in PREROUTING). A
	// node port on the node's own addresses passes it the same way unless a DNAT already
	// translated it: IPVS binds those too.
	InputChain = "MINIK8S-NETPOL-INPUT"
	// OutputChain is jumped to from OUTPUT: IPVS sends what it translated (at INPUT's hook,
	// after the filter table) on through OUTPUT, never FORWARD, so a local pod's new
	// connection to a Service is decided here, on the endpoint's address and port, by the
	// pod's egress chain, and one to a local pod by that pod's ingress chain, as
	// kube-router's KUBE-ROUTER-OUTPUT does. It takes only what IPVS translated (-m ipvs
	// --ipvs --vdir ORIGINAL): the node's own connections, and in iptables mode everything,
	// pass it. Its jumps are written only when the node's kernel has IPVS (State.IPVS).
	OutputChain = "MINIK8S-NETPOL-OUTPUT"
	// chainPrefix and setPrefix name every chain and set of ours but the top one.
	chainPrefix = "MKNP-"
	setPrefix   = "MKNP-"
	hashIPPort  = ipset.HashIPPort
	hashIP      = ipset.HashIP
	hashNet     = ipset.Type("hash:net")
)

// State is what the rules are computed from: the cluster's pods, namespaces,
// NetworkPolicies and admin policies, and the node whose pods are enforced.
type State struct {
	Node          string
	Pods          []*corev1.Pod
	Namespaces    []*corev1.Namespace
	Policies      []*networkingv1.NetworkPolicy
	AdminPolicies []*anpv1alpha1.AdminNetworkPolicy
	Baseline      *anpv1alpha1.BaselineAdminNetworkPolicy // nil: none
	Nodes         []*corev1.Node                          // what admin egress rules' node peers select
	// ServiceCIDRs are the Service ranges: InputChain lets connections to them pass, to be
	// decided after their translation (see InputChain).
	ServiceCIDRs []string
	// NodePorts are the Services' node ports by protocol: InputChain lets the connections
	// to them that no DNAT translated pass (see InputChain).
	NodePorts map[corev1.Protocol][]int32
	// IPVS: the kernel has IPVS (and its ipvs match): OutputChain decides what IPVS
	// translated. False: OutputChain holds the replies' rule alone.
	IPVS bool
}

// Ruleset is what one sync writes: the filter table's chains (TopChain, InputChain and
// OutputChain first) and the sets their rules match.
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
	rs, _ := build(s)
	return rs
}

// build computes the ruleset of s, and the model of it that pod changes update (model.go).
func build(s *State) (*Ruleset, *model) {
	m := newModel(newBuilder(s))
	for _, cidr := range s.ServiceCIDRs {
		if p, err := netip.ParsePrefix(cidr); err == nil && p.Addr().Is4() { // the rules are IPv4's
			m.serviceCIDRs = append(m.serviceCIDRs, p.String())
		}
	}
	m.ipvs = s.IPVS
	for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP} {
		if len(s.NodePorts[proto]) == 0 {
			continue
		}
		set := ipset.New(NodePortSet(proto), ipset.BitmapPort, fmt.Sprintf("%s node ports: decided after their translation", proto))
		for _, port := range s.NodePorts[proto] {
			set.Add(strconv.Itoa(int(port)))
		}
		m.b.sets[set.Name] = set
		m.nodePorts = append(m.nodePorts, set)
	}
	for _, p := range m.b.peers {
		m.pods[podKey(p)] = p
		m.indexIP(p, true)
		if pr := m.b.podRules(p); pr.exists() {
			m.local[podKey(p)] = pr
		}
	}
	m.b.fresh = nil
	return m.ruleset(), m
}

// podRules are what a local pod adds to the ruleset: its jumps from TopChain (and, egress,
// from InputChain) and its chains.
type podRules struct {
	egress, ingress string // the jump line in each direction; "": none
	chains          []Chain
}

func (r podRules) exists() bool { return len(r.chains) > 0 }

func (r podRules) equal(o podRules) bool {
	if r.egress != o.egress || r.ingress != o.ingress || len(r.chains) != len(o.chains) {
		return false
	}
	for i, c := range r.chains {
		if c.Name != o.chains[i].Name || !slices.Equal(c.Rules, o.chains[i].Rules) {
			return false
		}
	}
	return true
}

// podRules are p's rules when p is a pod of the node; none for the others.
func (b *builder) podRules(p *corev1.Pod) podRules {
	var r podRules
	if p.Spec.NodeName != b.state.Node || podIP(p) == "" {
		return r
	}
	for _, dir := range []networkingv1.PolicyType{networkingv1.PolicyTypeEgress, networkingv1.PolicyTypeIngress} {
		pc := b.podChain(p, dir)
		if !pc.exists() {
			continue
		}
		r.chains = append(r.chains, pc.chains(p, dir)...)
		if dir == networkingv1.PolicyTypeEgress {
			r.egress = jumpLine(p, dir)
		} else {
			r.ingress = jumpLine(p, dir)
		}
	}
	return r
}

// NodePortSet is the set of the node ports of proto (see InputChain).
func NodePortSet(proto corev1.Protocol) string { return setPrefix + "NODE-PORTS-" + string(proto) }

// ChainName is the chain of pod p's rules in direction dir.
func ChainName(p *corev1.Pod, dir networkingv1.PolicyType) string {
	return chainPrefix + string(dir[0]) + "-" + hash(p.Namespace, p.Name, string(p.UID))
}

// jumpLine is the rule sending p's connections in direction dir to its chain.
func jumpLine(p *corev1.Pod, dir networkingv1.PolicyType) string {
	addr := "-d" // ingress: to the pod
	if dir == networkingv1.PolicyTypeEgress {
		addr = "-s"
	}
	return fmt.Sprintf(`%s %s/32 -m comment --comment "%s/%s %s" -j %s`, addr, podIP(p), p.Namespace, p.Name, strings.ToLower(string(dir)), ChainName(p, dir))
}

func newBuilder(s *State) *builder {
	b := &builder{state: s, sets: map[string]*ipset.Set{}, members: map[string]func(*corev1.Pod) []string{},
		nsLabels: map[string]labels.Set{}, selectors: map[*metav1.LabelSelector]labels.Selector{},
		selected: map[*networkingv1.NetworkPolicyPeer][]*corev1.Pod{}, nsSelected: map[*metav1.LabelSelector]map[string]bool{}}
	for _, ns := range s.Namespaces {
		b.nsLabels[ns.Name] = ns.Labels
	}
	for _, p := range s.Pods {
		if podIP(p) != "" {
			b.peers = append(b.peers, p)
		}
	}
	// Listers list in no set order: sorted, an unchanged state gives the same
	// iptables-restore input, which the controller then does not write again.
	sortPods(b.peers)
	sort.Slice(s.Policies, func(i, j int) bool {
		a, c := s.Policies[i], s.Policies[j]
		return a.Namespace+"/"+a.Name < c.Namespace+"/"+c.Name
	})
	return b
}

type builder struct {
	state    *State
	peers    []*corev1.Pod // pods with an IP that peers may select (hostNetwork ones left out)
	nsLabels map[string]labels.Set
	sets     map[string]*ipset.Set
	// members gives, for each set whose members are pods, a pod's entries in it: the sets
	// are filled with it, and a pod's change applied with it (model.go).
	members map[string]func(*corev1.Pod) []string
	fresh   []*ipset.Set // the sets made since the last look (model.go)
	// Memos of one state: every pod a policy selects asks the same questions. selected
	// holds for peers (the pods each selects), so it goes when peers changes.
	selectors  map[*metav1.LabelSelector]labels.Selector
	selected   map[*networkingv1.NetworkPolicyPeer][]*corev1.Pod
	nsSelected map[*metav1.LabelSelector]map[string]bool // namespace selector -> namespace -> selects
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// sortPods orders pods by namespace/name: listers list in no set order, and an unchanged
// state must give the same iptables-restore input, which the controller then does not
// write again.
func sortPods(pods []*corev1.Pod) {
	sort.Slice(pods, func(i, j int) bool { return podKey(pods[i]) < podKey(pods[j]) })
}

// podChain is pod p's chain in one direction: isolatedBy lists the NetworkPolicies
// selecting p there, adminBy the admin policies with rules for p there (neither: p has no
// chain). Its entries are the admin tier, then from tier on the NetworkPolicy and baseline
// tiers: in a chain of their own (tierChainName) when a Pass goes there.
type podChain struct {
	name       string
	isolatedBy []string
	adminBy    []string
	entries    []entry
	tier       int
	passes     bool
}

func (c *podChain) exists() bool { return len(c.isolatedBy)+len(c.adminBy) > 0 }

func (b *builder) podChain(p *corev1.Pod, dir networkingv1.PolicyType) podChain {
	c := podChain{name: ChainName(p, dir)}
	admin := b.adminTier(p, dir, &c)
	var tier []entry
	for _, np := range b.state.Policies {
		if np.Namespace != p.Namespace || !hasType(np, dir) || !b.selects(&np.Spec.PodSelector, p.Labels) {
			continue
		}
		c.isolatedBy = append(c.isolatedBy, np.Namespace+"/"+np.Name)
		if dir == networkingv1.PolicyTypeIngress {
			for i, r := range np.Spec.Ingress {
				tier = append(tier, b.ruleEntries(np, p, dir, i, r.From, r.Ports)...)
			}
		} else {
			for i, r := range np.Spec.Egress {
				tier = append(tier, b.ruleEntries(np, p, dir, i, r.To, r.Ports)...)
			}
		}
	}
	// A pod some NetworkPolicy isolates is denied what they do not allow; the baseline
	// decides only for the others.
	closing := entry{drop: true, text: fmt.Sprintf(`-m comment --comment "%s/%s %s denied" -j DROP`, p.Namespace, p.Name, strings.ToLower(string(dir)))}
	if len(c.isolatedBy) == 0 {
		tier = b.baselineTier(p, dir, &c)
		closing = entry{allowRest: true, text: fmt.Sprintf(`-m comment --comment "%s/%s %s not denied" -j RETURN`, p.Namespace, p.Name, strings.ToLower(string(dir)))}
	}
	if !c.exists() {
		return c
	}
	if dir == networkingv1.PolicyTypeIngress {
		// The node itself (probes, kubectl port-forward's dial) may always reach its pods.
		c.entries = append(c.entries, entry{fromNode: true, text: `-m comment --comment "from the node itself" -m addrtype --src-type LOCAL -j RETURN`})
	}
	c.entries = append(c.entries, admin...)
	c.tier = len(c.entries)
	for _, e := range admin {
		c.passes = c.passes || e.pass
	}
	c.entries = append(append(c.entries, tier...), closing)
	return c
}

// chains are c as iptables chains: one, or two when a Pass goes to the second.
func (c *podChain) chains(p *corev1.Pod, dir networkingv1.PolicyType) []Chain {
	texts := func(es []entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.text)
		}
		return out
	}
	if !c.passes {
		return []Chain{{Name: c.name, Rules: texts(c.entries)}}
	}
	tier := tierChainName(p, dir)
	return []Chain{
		{Name: c.name, Rules: append(texts(c.entries[:c.tier]), fmt.Sprintf(`-m comment --comment "NetworkPolicy and baseline tiers" -g %s`, tier))},
		{Name: tier, Rules: texts(c.entries[c.tier:])},
	}
}

// entry is one rule of a pod's chain: its iptables text and what it matches, so that the
// verdict explain gives is read off the very entries the kernel is given.
type entry struct {
	text     string
	rule     RuleRef    // the policy rule it comes from (none for the node's RETURN and the DROP)
	peer     *ipset.Set // the far end's address in this set; nil: any address
	proto    corev1.Protocol
	ports    [2]int32   // a port or range; 0: any port (of proto, if any)
	portSet  *ipset.Set // an egress named port: the destination's ip,port in this set
	fromNode bool       // the node's own connections (addrtype LOCAL)
	drop     bool       // the closing DROP of a pod some NetworkPolicy isolates
	// allowRest: the closing RETURN of a pod isolated by admin policies only.
	allowRest bool
	deny      bool // an admin Deny rule: DROP when it matches
	pass      bool // an AdminNetworkPolicy Pass rule: to the NetworkPolicy tier
}

// RuleRef names one (peer, port) of one rule of a NetworkPolicy, an AdminNetworkPolicy or
// a BaselineAdminNetworkPolicy, as an entry's comment does.
type RuleRef struct {
	// Kind is "" for a NetworkPolicy, else AdminNetworkPolicy or BaselineAdminNetworkPolicy.
	Kind      string `json:"kind,omitempty"`
	Policy    string `json:"policy"`             // namespace/name; the name of a cluster-scoped admin policy
	Priority  *int32 `json:"priority,omitempty"` // of an AdminNetworkPolicy
	Name      string `json:"name,omitempty"`     // an admin policy rule's own name
	Action    string `json:"action,omitempty"`   // an admin policy rule's Allow, Deny or Pass
	Direction string `json:"direction"`
	Rule      int    `json:"rule"`     // index in spec.ingress or spec.egress
	Peer      int    `json:"peer"`     // index in from/to; -1: any peer
	PeerText  string `json:"peerText"` // the peer, as kubectl describe words it
	Port      int    `json:"port"`     // index in ports; -1: any port
	PortText  string `json:"portText"` // the port
}

func (r RuleRef) String() string {
	s := fmt.Sprintf("%s %s rule %d", r.owner(), r.Direction, r.Rule)
	if r.Kind != "" {
		s = r.Kind + " " + s
		if r.Priority != nil {
			s = fmt.Sprintf("%s (priority %d)", s, *r.Priority)
		}
		if r.Name != "" {
			s += fmt.Sprintf(" %q", r.Name)
		}
		s += " " + r.Action
	}
	return fmt.Sprintf("%s (%s %s, on %s)", s, map[string]string{"ingress": "from", "egress": "to"}[r.Direction], r.PeerText, r.PortText)
}

// owner is the policy as comments name it: namespace/name, anp/NAME or banp/NAME.
func (r RuleRef) owner() string {
	switch r.Kind {
	case KindANP:
		return "anp/" + r.Policy
	case KindBANP:
		return "banp/" + r.Policy
	}
	return r.Policy
}

// ruleEntries are the RETURN entries of one ingress (peers = from) or egress (peers = to)
// rule of np, for pod p: any peer with any port.
func (b *builder) ruleEntries(np *networkingv1.NetworkPolicy, p *corev1.Pod, dir networkingv1.PolicyType, idx int, peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort) []entry {
	ref := RuleRef{Policy: np.Namespace + "/" + np.Name, Direction: strings.ToLower(string(dir)), Rule: idx}
	return b.peerPortEntries(np.Namespace, ref, p, dir, peers, nil, ports, "-j RETURN")
}

// peerPortEntries are the entries of one rule (ref) of a policy in namespace ns (any, for
// the cluster-scoped admin policies, whose peers all select namespaces), for pod p: one per
// peer and port, jumping to target. nodes are an admin egress rule's peers selecting nodes,
// numbered after peers; a rule with neither peers nor nodes takes any peer.
func (b *builder) peerPortEntries(ns string, ref RuleRef, p *corev1.Pod, dir networkingv1.PolicyType, peers []networkingv1.NetworkPolicyPeer, nodes []*metav1.LabelSelector, ports []networkingv1.NetworkPolicyPort, target string) []entry {
	comment := fmt.Sprintf(`-m comment --comment "%s %s rule %d"`, ref.owner(), ref.Direction, ref.Rule)
	side := "src"
	if dir == networkingv1.PolicyTypeEgress {
		side = "dst"
	}
	ruleID := func(parts ...string) string {
		id := []string{ref.Policy, string(dir), strconv.Itoa(ref.Rule)}
		if ref.Kind != "" {
			id = append([]string{ref.Kind}, id...)
		}
		return hash(append(id, parts...)...)
	}
	ref.Peer, ref.PeerText, ref.Port, ref.PortText = -1, "any peer", -1, "any port"
	// One entry per peer with its set (nil: any address).
	peerEntries := []entry{{rule: ref}}
	var podPeers []*networkingv1.NetworkPolicyPeer // the pod-selecting peers, for named egress ports
	anyPeer := len(peers)+len(nodes) == 0
	if !anyPeer {
		peerEntries = nil
		for j := range peers {
			peer := &peers[j]
			e := entry{rule: ref}
			e.rule.Peer, e.rule.PeerText = j, peerText(peer)
			setComment := fmt.Sprintf("%s %s rule %d peer %d", ref.owner(), dir, ref.Rule, j)
			if peer.IPBlock != nil {
				var fresh bool
				if e.peer, fresh = b.set(ruleID("peer", strconv.Itoa(j)), hashNet, setComment); fresh {
					for _, n := range ipv4Nets(peer.IPBlock.CIDR) {
						e.peer.Add(n)
					}
					for _, x := range peer.IPBlock.Except {
						for _, n := range ipv4Nets(x) {
							e.peer.Add(n + " nomatch")
						}
					}
				}
				peerEntries = append(peerEntries, e)
				continue
			}
			podPeers = append(podPeers, peer)
			e.peer = b.podSet(ruleID("peer", strconv.Itoa(j)), hashIP, setComment, func() []*corev1.Pod { return b.selectPeers(ns, peer) }, func(pod *corev1.Pod) []string {
				if !b.selectsPeer(ns, peer, pod) {
					return nil
				}
				return []string{podIP(pod)}
			})
			peerEntries = append(peerEntries, e)
		}
		// A node peer's set holds the addresses of the nodes it selects, as they are now: a
		// node's change makes a new build, whose writes are these sets' members that changed.
		for k, sel := range nodes {
			j := len(peers) + k
			e := entry{rule: ref}
			e.rule.Peer, e.rule.PeerText = j, "NodeSelector: "+selectorText(sel)
			var fresh bool
			if e.peer, fresh = b.set(ruleID("peer", strconv.Itoa(j)), hashIP, fmt.Sprintf("%s %s rule %d peer %d", ref.owner(), dir, ref.Rule, j)); fresh {
				for _, a := range b.nodeAddresses(sel) {
					e.peer.Add(a)
				}
			}
			peerEntries = append(peerEntries, e)
		}
	}
	// peerPods are the rule's peer pods (with repeats): any pod when it lists no peers.
	peerPods := func() []*corev1.Pod {
		if anyPeer {
			return b.peers
		}
		var out []*corev1.Pod
		for _, peer := range podPeers {
			out = append(out, b.selectPeers(ns, peer)...)
		}
		return out
	}
	// peerPod tells whether pod is a peer of the rule.
	peerPod := func(pod *corev1.Pod) bool {
		if anyPeer {
			return true
		}
		for _, peer := range podPeers {
			if b.selectsPeer(ns, peer, pod) {
				return true
			}
		}
		return false
	}
	peerMatch := func(e entry) string {
		if e.peer == nil {
			return ""
		}
		return fmt.Sprintf("-m set --match-set %s %s", e.peer.Name, side)
	}
	var out []entry
	if len(ports) == 0 {
		for _, e := range peerEntries {
			e.text = join(peerMatch(e), comment, target)
			out = append(out, e)
		}
		return out
	}
	for k, port := range ports {
		proto := protocolOf(port)
		lproto := strings.ToLower(string(proto))
		if port.Port != nil && port.Port.Type == intstr.String {
			if dir == networkingv1.PolicyTypeIngress {
				// The destination is p: its own container port of that name.
				if n, proto := namedPort(p, port.Port.StrVal, proto); n != 0 {
					for _, e := range peerEntries {
						e.rule.Port, e.rule.PortText = k, fmt.Sprintf("%s port %s (%d on %s/%s)", proto, port.Port.StrVal, n, p.Namespace, p.Name)
						e.proto, e.ports = proto, [2]int32{n, n}
						e.text = join(peerMatch(e), fmt.Sprintf("-p %s --dport %d", strings.ToLower(string(proto)), n), comment, target)
						out = append(out, e)
					}
				}
				continue
			}
			// Egress to a named port: each peer pod's own port of that name, one ip,port set
			// (whose entries carry the protocol, so anyProtocol needs no -p).
			name := port.Port.StrVal
			set := b.podSet(ruleID("port", strconv.Itoa(k)), hashIPPort, fmt.Sprintf("%s egress rule %d port %s", ref.owner(), ref.Rule, name), peerPods, func(pod *corev1.Pod) []string {
				if n, proto := namedPort(pod, name, proto); n != 0 && peerPod(pod) {
					return []string{ipset.IPPort(podIP(pod), strings.ToLower(string(proto)), n)}
				}
				return nil
			})
			e := entry{rule: ref, proto: proto, portSet: set}
			e.rule.Port, e.rule.PortText = k, strings.TrimSpace(fmt.Sprintf("%s port %s of the peer pods", proto, port.Port.StrVal))
			match := fmt.Sprintf("-m set --match-set %s dst,dst", set.Name)
			if proto != anyProtocol {
				match = "-p " + lproto + " " + match
			}
			e.text = join(match, comment, target)
			out = append(out, e)
			continue
		}
		pm := "-p " + lproto
		var rng [2]int32
		portText := string(proto) + " any port"
		if port.Port != nil {
			rng = [2]int32{int32(port.Port.IntValue()), int32(port.Port.IntValue())}
			pm += " --dport " + strconv.Itoa(port.Port.IntValue())
			portText = fmt.Sprintf("%s %d", proto, rng[0])
			if port.EndPort != nil && *port.EndPort > port.Port.IntVal {
				rng[1] = *port.EndPort
				pm += ":" + strconv.Itoa(int(*port.EndPort))
				portText += fmt.Sprintf("-%d", rng[1])
			}
		}
		for _, e := range peerEntries {
			e.rule.Port, e.rule.PortText = k, portText
			e.proto, e.ports = proto, rng
			e.text = join(peerMatch(e), pm, comment, target)
			out = append(out, e)
		}
	}
	return out
}

// peerText words a peer as kubectl describe does.
func peerText(p *networkingv1.NetworkPolicyPeer) string {
	if p.IPBlock != nil {
		s := "IPBlock " + p.IPBlock.CIDR
		if len(p.IPBlock.Except) > 0 {
			s += " except " + strings.Join(p.IPBlock.Except, ", ")
		}
		return s
	}
	var parts []string
	if p.NamespaceSelector != nil {
		parts = append(parts, "NamespaceSelector: "+selectorText(p.NamespaceSelector))
	}
	if p.PodSelector != nil {
		parts = append(parts, "PodSelector: "+selectorText(p.PodSelector))
	}
	if p.NamespaceSelector == nil {
		parts = append(parts, "in the policy's namespace")
	}
	return strings.Join(parts, ", ")
}

func selectorText(sel *metav1.LabelSelector) string {
	if s := metav1.FormatLabelSelector(sel); s != "<none>" {
		return s
	}
	return "<all>"
}

// selectPeers lists the pods a pod/namespace selector peer of a policy in ns selects.
func (b *builder) selectPeers(ns string, peer *networkingv1.NetworkPolicyPeer) []*corev1.Pod {
	if out, ok := b.selected[peer]; ok {
		return out
	}
	pods := b.peers
	if peer.NamespaceSelector == nil {
		// b.peers is sorted: the policy's namespace is one run of it.
		i := sort.Search(len(pods), func(i int) bool { return pods[i].Namespace >= ns })
		j := sort.Search(len(pods), func(i int) bool { return pods[i].Namespace > ns })
		pods = pods[i:j]
	}
	var out []*corev1.Pod
	for _, pod := range pods {
		if b.selectsPeer(ns, peer, pod) {
			out = append(out, pod)
		}
	}
	b.selected[peer] = out
	return out
}

// selectsPeer tells whether a pod/namespace selector peer of a policy in ns selects pod.
func (b *builder) selectsPeer(ns string, peer *networkingv1.NetworkPolicyPeer, pod *corev1.Pod) bool {
	if peer.NamespaceSelector == nil {
		if pod.Namespace != ns {
			return false
		}
	} else if !b.selectsNamespace(peer.NamespaceSelector, pod.Namespace) {
		return false
	}
	return peer.PodSelector == nil || b.selects(peer.PodSelector, pod.Labels)
}

// selectsNamespace tells whether sel selects namespace ns (asked once per pair).
func (b *builder) selectsNamespace(sel *metav1.LabelSelector, ns string) bool {
	memo := b.nsSelected[sel]
	if memo == nil {
		memo = map[string]bool{}
		b.nsSelected[sel] = memo
	}
	ok, seen := memo[ns]
	if !seen {
		ok = b.selects(sel, b.nsLabels[ns])
		memo[ns] = ok
	}
	return ok
}

// set is the set of id, and whether it is new: its members, the same for every pod whose
// rule it serves, are filled once.
func (b *builder) set(id string, typ ipset.Type, comment string) (*ipset.Set, bool) {
	name := setPrefix + string(typ[5]) + "-" + id
	if s, ok := b.sets[name]; ok {
		return s, false
	}
	s := ipset.New(name, typ, comment)
	b.sets[name] = s
	b.fresh = append(b.fresh, s)
	return s, true
}

// podSet is the set of id whose members are pods, members giving a pod's entries in it;
// filled when new from the pods candidates gives (those members may give entries for).
func (b *builder) podSet(id string, typ ipset.Type, comment string, candidates func() []*corev1.Pod, members func(*corev1.Pod) []string) *ipset.Set {
	s, fresh := b.set(id, typ, comment)
	if fresh {
		b.members[s.Name] = members
		for _, pod := range candidates() {
			for _, e := range members(pod) {
				s.Add(e)
			}
		}
	}
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

// anyProtocol, as a named port's protocol, takes each pod's container port of that name
// with whatever protocol it has: an admin policy's named port names no protocol.
const anyProtocol corev1.Protocol = ""

// namedPort is p's container port called name with protocol proto (anyProtocol: any), and
// its protocol; 0 when p has none.
func namedPort(p *corev1.Pod, name string, proto corev1.Protocol) (int32, corev1.Protocol) {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			pp := cp.Protocol
			if pp == "" {
				pp = corev1.ProtocolTCP
			}
			if cp.Name == name && (proto == anyProtocol || pp == proto) {
				return cp.ContainerPort, pp
			}
		}
	}
	return 0, ""
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
func (b *builder) selects(sel *metav1.LabelSelector, set labels.Set) bool {
	s, ok := b.selectors[sel]
	if !ok {
		var err error
		if s, err = metav1.LabelSelectorAsSelector(sel); err != nil {
			s = labels.Nothing()
		}
		b.selectors[sel] = s
	}
	return s.Matches(set)
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
