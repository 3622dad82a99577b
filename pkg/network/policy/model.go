package policy

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/proxy/ipset"
	corev1 "k8s.io/api/core/v1"
)

// model is the ruleset and sets the last sync wrote, kept so that pods coming, going or
// changing apply as kube-router's and felix's pod handlers apply them, without building
// everything again: a pod's change is its entries in the sets whose members are pods, and,
// for a pod of the node, its own chains and jumps. Policies, namespaces and admin policies
// are the builder's state: their changes take a full build.
type model struct {
	b     *builder
	pods  map[string]*corev1.Pod     // the pods with an IP, by namespace/name
	byIP  map[string]map[string]bool // pod IP -> the keys of the pods with it
	local map[string]podRules        // the node's pods that have chains, by key
	// serviceCIDRs and the ports of the nodePorts sets pass InputChain (see there)
	serviceCIDRs []string
	nodePorts    []*ipset.Set
	ipvs         bool // OutputChain decides what IPVS translated
}

func newModel(b *builder) *model {
	return &model{b: b, pods: map[string]*corev1.Pod{}, byIP: map[string]map[string]bool{}, local: map[string]podRules{}}
}

func (m *model) indexIP(p *corev1.Pod, in bool) {
	ip, key := podIP(p), podKey(p)
	if in {
		if m.byIP[ip] == nil {
			m.byIP[ip] = map[string]bool{}
		}
		m.byIP[ip][key] = true
		return
	}
	delete(m.byIP[ip], key)
	if len(m.byIP[ip]) == 0 {
		delete(m.byIP, ip)
	}
}

// ruleset is the whole ruleset of the model: what Build gives for the same state, but for
// sets no rule uses any more (left to the next full build).
func (m *model) ruleset() *Ruleset {
	rs := &Ruleset{Chains: m.tops()}
	for _, k := range slices.Sorted(maps.Keys(m.local)) {
		rs.Chains = append(rs.Chains, m.local[k].chains...)
	}
	for _, n := range slices.Sorted(maps.Keys(m.b.sets)) {
		rs.Sets = append(rs.Sets, m.b.sets[n])
	}
	return rs
}

// tops are TopChain, InputChain and OutputChain: replies pass, then the jumps of the node's
// pods to their chains; InputChain has the egress ones only (no pod is a destination in
// INPUT), OutputChain all of them, for what IPVS translated alone.
func (m *model) tops() []Chain {
	replies := `-m comment --comment "replies of allowed connections" -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN`
	var egress, ingress []string
	for _, k := range slices.Sorted(maps.Keys(m.local)) {
		r := m.local[k]
		if r.egress != "" {
			egress = append(egress, r.egress)
		}
		if r.ingress != "" {
			ingress = append(ingress, r.ingress)
		}
	}
	input := []string{replies}
	for _, cidr := range m.serviceCIDRs {
		input = append(input, fmt.Sprintf(`-d %s -m comment --comment "Services: decided after their translation" -j RETURN`, cidr))
	}
	for _, set := range m.nodePorts {
		input = append(input, fmt.Sprintf(`-p %s -m set --match-set %s dst -m conntrack ! --ctstate DNAT -m comment --comment "node ports: decided after their translation" -j RETURN`,
			strings.ToLower(strings.TrimPrefix(set.Name, NodePortSet(""))), set.Name))
	}
	// Egress of the source first, then ingress of the destination: a connection between
	// two local pods must pass both.
	jumps := append(append([]string{}, egress...), ingress...)
	output := []string{replies}
	if m.ipvs {
		output = append(append(output, `-m comment --comment "what IPVS did not translate" -m ipvs ! --ipvs -j RETURN`,
			`-m comment --comment "IPVS replies" -m ipvs --vdir REPLY -j RETURN`), jumps...)
	}
	return []Chain{
		{Name: TopChain, Rules: append([]string{replies}, jumps...)},
		{Name: InputChain, Rules: append(input, egress...)},
		{Name: OutputChain, Rules: output},
	}
}

// podDelta is what applying pods' changes writes.
type podDelta struct {
	sets   string   // ipset restore input: the new sets, then the entries added and deleted
	fresh  []string // the sets it creates
	chains []Chain  // the chains to write again (TopChain, InputChain and OutputChain first when a jump changed)
	gone   []string // the chains to delete
}

// rules is the iptables-restore --noflush input of the chains that change; "": none.
func (d *podDelta) rules() string {
	if len(d.chains)+len(d.gone) == 0 {
		return ""
	}
	return (&Ruleset{Chains: d.chains}).Restore(d.gone)
}

// applyPods brings the model to the pods' current versions (key -> pod; nil: deleted) and
// says what to write for that.
func (m *model) applyPods(now map[string]*corev1.Pod) *podDelta {
	type change struct {
		key      string
		old, new *corev1.Pod
	}
	var changes []change
	localChange := false
	for _, key := range slices.Sorted(maps.Keys(now)) {
		p := now[key]
		if p != nil && podIP(p) == "" {
			p = nil // no IP, no rules: as if gone
		}
		old := m.pods[key]
		if sameToPolicies(old, p) {
			continue
		}
		changes = append(changes, change{key, old, p})
		localChange = localChange || m.isLocal(old) || m.isLocal(p)
		if old != nil {
			m.indexIP(old, false)
			delete(m.pods, key)
		}
		if p != nil {
			m.pods[key] = p
			m.indexIP(p, true)
		}
	}
	d := &podDelta{}
	if len(changes) == 0 {
		return d
	}
	var sets strings.Builder
	// The node's pods' own rules, first: a pod newly selected by a rule no pod had before
	// makes that rule's sets, filled from the pods as they are now.
	if localChange {
		m.b.peers = slices.Collect(maps.Values(m.pods))
		sortPods(m.b.peers)
		clear(m.b.selected)
		topChanged := false
		for _, c := range changes {
			old := m.local[c.key]
			var r podRules
			if c.new != nil {
				r = m.b.podRules(c.new)
			}
			if old.equal(r) {
				continue
			}
			topChanged = topChanged || old.egress != r.egress || old.ingress != r.ingress
			d.chains = append(d.chains, r.chains...)
			for _, ch := range old.chains {
				if !slices.ContainsFunc(r.chains, func(n Chain) bool { return n.Name == ch.Name }) {
					d.gone = append(d.gone, ch.Name)
				}
			}
			if r.exists() {
				m.local[c.key] = r
			} else {
				delete(m.local, c.key)
			}
		}
		if topChanged {
			d.chains = append(m.tops(), d.chains...)
		}
		for _, s := range m.b.fresh {
			d.fresh = append(d.fresh, s.Name)
			sets.WriteString(ipset.Script([]*ipset.Set{s}, map[string]map[string]bool{}))
		}
		m.b.fresh = nil
	}
	// Then every pod set's members: the pod's entries it no longer gives go (unless another
	// pod with the same IP gives them), the ones it now gives come.
	for _, name := range slices.Sorted(maps.Keys(m.b.members)) {
		members, set := m.b.members[name], m.b.sets[name]
		for _, c := range changes {
			var was, is []string
			if c.old != nil {
				was = members(c.old)
			}
			if c.new != nil {
				is = members(c.new)
			}
			for _, e := range was {
				if set.Entries[e] && !slices.Contains(is, e) && !m.given(members, podIP(c.old), e) {
					delete(set.Entries, e)
					fmt.Fprintf(&sets, "del %s %s -exist\n", name, e)
				}
			}
			for _, e := range is {
				if !set.Entries[e] {
					set.Entries[e] = true
					fmt.Fprintf(&sets, "add %s %s -exist\n", name, e)
				}
			}
		}
	}
	d.sets = sets.String()
	return d
}

// given tells whether a pod with address ip gives entry e in the set of members.
func (m *model) given(members func(*corev1.Pod) []string, ip, e string) bool {
	for key := range m.byIP[ip] {
		if slices.Contains(members(m.pods[key]), e) {
			return true
		}
	}
	return false
}

func (m *model) isLocal(p *corev1.Pod) bool { return p != nil && p.Spec.NodeName == m.b.state.Node }

// sameToPolicies tells whether two versions of a pod (nil: none, or without an IP) are the
// same for the rules and sets: a status update changing nothing of that is no work.
func sameToPolicies(a, b *corev1.Pod) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a == b {
		return true
	}
	if a.UID != b.UID || podIP(a) != podIP(b) || a.Spec.NodeName != b.Spec.NodeName || !maps.Equal(a.Labels, b.Labels) ||
		len(a.Spec.Containers) != len(b.Spec.Containers) {
		return false
	}
	for i := range a.Spec.Containers {
		if !reflect.DeepEqual(a.Spec.Containers[i].Ports, b.Spec.Containers[i].Ports) {
			return false
		}
	}
	return true
}
