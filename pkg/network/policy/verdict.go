package policy

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/minik8s/minik8s/pkg/proxy/ipset"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Connection is the first packet of a connection as a pod's chain sees it (after any
// Service DNAT): from Src to Dst:Port over Protocol.
type Connection struct {
	Src, Dst string
	Protocol corev1.Protocol
	Port     int32
	// FromNode: Src is an address of the destination pod's node (the node itself, or a
	// hostNetwork pod there).
	FromNode bool
	// SrcName, DstName name the ends in messages (namespace/name); "": their addresses.
	SrcName, DstName string
}

// Verdict is what one pod's chain in one direction decides for a connection.
type Verdict struct {
	Direction  string   `json:"direction"` // "egress" (of the source) or "ingress" (of the destination)
	Pod        string   `json:"pod"`       // namespace/name
	Node       string   `json:"node"`
	IsolatedBy []string `json:"isolatedBy"` // the NetworkPolicies selecting the pod in this direction
	// AdminBy are the admin policies with rules for the pod in this direction ("anp/NAME",
	// "banp/default"); with IsolatedBy empty too, the pod is not isolated.
	AdminBy []string `json:"adminBy,omitempty"`
	Allowed bool     `json:"allowed"`
	// Chain is the pod's chain ("" when not isolated); Index is the rule of it that decided
	// (a RETURN, or the closing DROP) and Rule that rule's text, as the controller wrote it.
	Chain  string   `json:"chain,omitempty"`
	Index  int      `json:"index"`
	Rule   string   `json:"rule,omitempty"`
	By     *RuleRef `json:"by,omitempty"` // the policy rule that allowed it (or, an admin one, denied it)
	Reason string   `json:"reason"`
}

// Decide is the verdict of pod's chain in direction dir on c, read off the chain entries
// Build writes for pod from s: the first entry matching c decides, as in the kernel.
func Decide(s *State, pod *corev1.Pod, dir networkingv1.PolicyType, c Connection) Verdict {
	v := Verdict{Direction: strings.ToLower(string(dir)), Pod: pod.Namespace + "/" + pod.Name, Node: pod.Spec.NodeName, IsolatedBy: []string{}}
	if pod.Spec.HostNetwork {
		v.Allowed, v.Reason = true, "not isolated: policies do not apply to hostNetwork pods"
		return v
	}
	if podIP(pod) == "" {
		v.Reason = "the pod has no IP (not running): no chain"
		return v
	}
	pc := newBuilder(s).podChain(pod, dir)
	if !pc.exists() {
		v.Allowed, v.Reason = true, fmt.Sprintf("not isolated for %s: no policy selects %s", v.Direction, v.Pod)
		return v
	}
	v.IsolatedBy, v.AdminBy, v.Chain = pc.isolatedBy, pc.adminBy, pc.name
	far := c.Src
	if dir == networkingv1.PolicyTypeEgress {
		far = c.Dst
	}
	var passed *RuleRef
	for i := 0; i < len(pc.entries); i++ {
		e := pc.entries[i]
		if !e.matches(c, far) {
			continue
		}
		v.Index, v.Rule = i, e.text
		if pc.passes && i >= pc.tier {
			v.Chain, v.Index = tierChainName(pod, dir), i-pc.tier
		}
		by := e.rule
		switch {
		case e.pass:
			// The rest of the admin tier is skipped; the next tiers decide.
			passed, i = &by, pc.tier-1
			continue
		case e.drop:
			what := "from " + orAddr(c.SrcName, c.Src)
			if dir == networkingv1.PolicyTypeEgress {
				what = "to " + orAddr(c.DstName, c.Dst)
			}
			v.Reason = fmt.Sprintf("denied: no policy selecting %s allows %s %s on %s %d (policies: %s)", v.Pod, v.Direction, what, c.Protocol, c.Port, strings.Join(pc.isolatedBy, ", "))
		case e.deny:
			v.By, v.Reason = &by, "denied by "+by.String()
		case e.allowRest:
			v.Allowed, v.Reason = true, fmt.Sprintf("allowed: no admin policy rule matched (%s) and no NetworkPolicy isolates %s", strings.Join(pc.adminBy, ", "), v.Pod)
		case e.fromNode:
			v.Allowed, v.Reason = true, "allowed: from the node itself (probes), before any policy"
		default:
			v.Allowed, v.By, v.Reason = true, &by, "allowed by "+by.String()
		}
		if passed != nil {
			v.Reason += ", after " + passed.String()
		}
		return v
	}
	v.Reason = "no rule of the chain matched (it always ends in a DROP or a RETURN)" // not reached
	return v
}

func orAddr(name, addr string) string {
	if name == "" {
		return addr
	}
	return name + " (" + addr + ")"
}

// matches tells whether e takes connection c, far being the address on the other end.
func (e *entry) matches(c Connection, far string) bool {
	switch {
	case e.drop, e.allowRest:
		return true
	case e.fromNode:
		return c.FromNode
	}
	if e.peer != nil && !inSet(e.peer, far) {
		return false
	}
	if e.proto != "" && e.proto != c.Protocol {
		return false
	}
	if e.ports[0] != 0 && (c.Port < e.ports[0] || c.Port > e.ports[1]) {
		return false
	}
	return e.portSet == nil || e.portSet.Entries[ipset.IPPort(c.Dst, string(c.Protocol), c.Port)]
}

// inSet is the kernel's test of ip against a hash:ip or hash:net set: for hash:net the
// most specific entry containing ip decides, and a nomatch one excludes it.
func inSet(s *ipset.Set, ip string) bool {
	if s.Type != hashNet {
		return s.Entries[ip]
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	best, in := -1, false
	for ent := range s.Entries {
		cidr, nomatch := strings.CutSuffix(ent, " nomatch")
		p, err := netip.ParsePrefix(cidr)
		if err != nil || !p.Contains(a) || p.Bits() <= best {
			continue
		}
		best, in = p.Bits(), !nomatch
	}
	return in
}
