package explain

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Query is one packet to explain: to DstIP:DstPort over Protocol (a Service's cluster IP,
// external or load balancer IP, or a node port on this node), from From ("" when unknown:
// the decisions that depend on the source are then given as conditions).
type Query struct {
	Service  string `json:"service"` // namespace/name:port, kube-proxy's service port name
	Protocol string `json:"protocol"`
	Kind     string `json:"kind"` // "cluster IP", "external IP", "load balancer IP", "node port"
	DstIP    string `json:"destination,omitempty"`
	DstPort  int32  `json:"port"`
	From     string `json:"from,omitempty"`
	// Local says whether ip is an address of this node (addrtype LOCAL); nil: unknown.
	Local func(ip string) bool `json:"-"`
}

// Path is where the kernel's rules send the packet.
type Path struct {
	Query
	Hops       []Hop      `json:"hops"`
	Masquerade []string   `json:"masquerade"` // the source NAT decisions met, in order
	Affinity   string     `json:"affinity,omitempty"`
	Endpoints  []Endpoint `json:"endpoints"`
	Verdict    string     `json:"verdict"`
}

// Hop is a rule the packet meets, with its counters and what it means for this packet.
type Hop struct {
	Table   string `json:"table"`
	Chain   string `json:"chain"`
	Rule    string `json:"rule"`
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
	Note    string `json:"note,omitempty"`
}

// Endpoint is a KUBE-SEP chain the packet may reach.
type Endpoint struct {
	Chain       string  `json:"chain"`
	Via         string  `json:"via"`            // the chain choosing it (KUBE-SVC-... or KUBE-SVL-...)
	When        string  `json:"when,omitempty"` // condition of that branch ("" always)
	Probability float64 `json:"probability"`
	Packets     uint64  `json:"packets"` // of the rule choosing it
	Bytes       uint64  `json:"bytes"`
	DNAT        string  `json:"dnat"`              // --to-destination
	Hairpin     string  `json:"hairpin,omitempty"` // source masqueraded when it is the endpoint itself
}

// Walk follows q through t.
func Walk(t Tables, q Query) Path {
	w := &walker{t: t, p: Path{Query: q, Masquerade: []string{}, Endpoints: []Endpoint{}, Hops: []Hop{}}}
	nat := t["nat"]
	if nat == nil {
		w.p.Verdict = "no nat table in the rules read: is miniproxy running in iptables mode here?"
		return w.p
	}
	entry := "KUBE-SERVICES"
	if q.Kind == "node port" {
		for _, r := range nat.Chains["KUBE-SERVICES"] {
			if r.Target == "KUBE-NODEPORTS" {
				w.hop("nat", "KUBE-SERVICES", r, "node ports: destination is a local address")
			}
		}
		entry = "KUBE-NODEPORTS"
	}
	distinct := func() int {
		seen := map[string]bool{}
		for _, e := range w.p.Endpoints {
			seen[e.Chain] = true
		}
		return len(seen)
	}
	if w.walk(entry, "", 1) {
		w.p.Verdict = fmt.Sprintf("DNAT to one of %d endpoints", distinct())
	}
	if len(w.p.Endpoints) > 0 && w.p.Verdict == "" {
		w.p.Verdict = fmt.Sprintf("DNAT to one of %d endpoints, depending on the source", distinct())
	}
	if w.p.Verdict == "" {
		w.refused()
	}
	if len(w.p.Masquerade) == 0 && len(w.p.Endpoints) > 0 {
		w.p.Masquerade = append(w.p.Masquerade, "not masqueraded: the endpoint sees the client's address")
	}
	return w.p
}

type walker struct {
	t     Tables
	p     Path
	depth int
}

func (w *walker) hop(table, chain string, r Rule, note string) {
	w.p.Hops = append(w.p.Hops, Hop{Table: table, Chain: chain, Rule: r.Text, Packets: r.Packets, Bytes: r.Bytes, Note: note})
}

// walk follows chain's rules for this packet with weight the share of traffic entering it
// under condition cond; it says whether every packet got a DNAT (the walk is over).
func (w *walker) walk(chain, cond string, weight float64) bool {
	if w.depth > 8 {
		return false
	}
	w.depth++
	defer func() { w.depth-- }()
	remaining := 1.0
	for _, r := range w.t["nat"].Chains[chain] {
		ok, why := w.matches(r)
		if !ok {
			if r.Target == "KUBE-MARK-MASQ" && why != "" {
				w.hop("nat", chain, r, "not taken: "+why)
			}
			continue
		}
		when := join(cond, why)
		switch {
		case r.Target == "KUBE-MARK-MASQ":
			reason := r.Comment
			if reason == "" {
				reason = r.Text
			}
			if when == "" {
				w.p.Masquerade = append(w.p.Masquerade, "masqueraded: "+reason)
				w.hop("nat", chain, r, "masquerade")
			} else {
				w.p.Masquerade = append(w.p.Masquerade, "masqueraded if "+when+": "+reason)
				w.hop("nat", chain, r, "masquerade if "+when)
			}
		case strings.HasPrefix(r.Target, "KUBE-SEP-") && r.RecentCheck:
			w.p.Affinity = fmt.Sprintf("ClientIP: a client that reached an endpoint in the last %ds goes back to it (recent list per KUBE-SEP); new clients are spread as below", r.RecentSeconds)
		case strings.HasPrefix(r.Target, "KUBE-SEP-"):
			p := remaining
			if r.Probability > 0 {
				p = remaining * r.Probability
			}
			remaining -= p
			w.p.Endpoints = append(w.p.Endpoints, w.endpoint(r, chain, when, p*weight))
			if remaining < 1e-9 && why == "" {
				return true
			}
		case strings.HasPrefix(r.Target, "KUBE-"):
			note := ""
			if why != "" {
				note = "if " + why
			}
			w.hop("nat", chain, r, note)
			if w.walk(r.Target, when, weight*remaining) && why == "" {
				return true
			}
			if r.Target == "KUBE-MARK-DROP" && why == "" {
				w.p.Verdict = "DROP"
				return false
			}
		case r.Target == "" && strings.HasPrefix(chain, "KUBE-FW-"):
			w.hop("nat", chain, r, "not DNATed: the filter table's KUBE-PROXY-FIREWALL drops it")
			if why == "" {
				w.firewall()
				return false
			}
		case r.Target == "RETURN":
			w.hop("nat", chain, r, "")
			if why == "" {
				return false
			}
		}
	}
	return false
}

// endpoint reads the KUBE-SEP chain r jumps to.
func (w *walker) endpoint(r Rule, via, when string, p float64) Endpoint {
	ep := Endpoint{Chain: r.Target, Via: via, When: when, Probability: p, Packets: r.Packets, Bytes: r.Bytes}
	for _, s := range w.t["nat"].Chains[r.Target] {
		switch s.Target {
		case "KUBE-MARK-MASQ":
			ep.Hairpin = "masqueraded when the source is " + strings.TrimSuffix(s.Src.CIDR, "/32") + " (the endpoint itself: hairpin)"
		case "DNAT":
			for i, a := range s.TargetArgs {
				if a == "--to-destination" && i+1 < len(s.TargetArgs) {
					ep.DNAT = s.TargetArgs[i+1]
				}
			}
		}
	}
	return ep
}

// refused looks for the filter table's answer to a packet nat did not DNAT: REJECT or DROP
// for services without (local) endpoints.
func (w *walker) refused() {
	filter := w.t["filter"]
	chain := "KUBE-EXTERNAL-SERVICES"
	if w.p.Kind == "cluster IP" {
		chain = "KUBE-SERVICES"
	}
	if filter != nil {
		for _, r := range filter.Chains[chain] {
			if ok, why := w.matches(r); ok && why == "" && (r.Target == "REJECT" || r.Target == "DROP") {
				w.hop("filter", chain, r, r.Comment)
				w.p.Verdict = r.Target + ": " + r.Comment
				return
			}
		}
	}
	w.p.Verdict = "no rule for this destination: the packet is not a Service's (or miniproxy has not synced it yet)"
}

// firewall finds the DROP of KUBE-PROXY-FIREWALL for a load balancer IP.
func (w *walker) firewall() {
	if filter := w.t["filter"]; filter != nil {
		for _, r := range filter.Chains["KUBE-PROXY-FIREWALL"] {
			if ok, why := w.matches(r); ok && why == "" {
				w.hop("filter", "KUBE-PROXY-FIREWALL", r, "source not in loadBalancerSourceRanges")
				w.p.Verdict = r.Target + ": " + r.Comment
				return
			}
		}
	}
	w.p.Verdict = "DROP: source not in loadBalancerSourceRanges"
}

// matches evaluates r for the packet: false when it cannot match; true with why == "" when
// it matches; true with why a condition when that depends on what is not known (the source).
func (w *walker) matches(r Rule) (bool, string) {
	q := w.p.Query
	if r.Protocol != "" && !strings.EqualFold(r.Protocol, q.Protocol) {
		return false, ""
	}
	if r.DPort != "" && r.DPort != strconv.Itoa(int(q.DstPort)) {
		return false, ""
	}
	if r.Dst.CIDR != "" {
		if q.Kind == "node port" || contains(r.Dst.CIDR, q.DstIP) == r.Dst.Not {
			return false, ""
		}
	}
	switch {
	case r.DstLocal == 0:
	case q.Kind == "node port":
		if r.DstLocal < 0 {
			return false, ""
		}
	case q.Kind == "cluster IP" || q.Local != nil:
		local := q.Kind != "cluster IP" && q.Local(q.DstIP)
		if local != (r.DstLocal > 0) {
			return false, ""
		}
	}
	var conds []string
	if r.Src.CIDR != "" {
		switch {
		case q.From == "":
			if r.Src.Not {
				conds = append(conds, "the source is outside "+r.Src.CIDR)
			} else {
				conds = append(conds, "the source is in "+r.Src.CIDR)
			}
		case contains(r.Src.CIDR, q.From) == r.Src.Not:
			if r.Target == "KUBE-MARK-MASQ" {
				return false, fmt.Sprintf("source %s %s %s", q.From, map[bool]string{true: "is in", false: "is outside"}[r.Src.Not], r.Src.CIDR)
			}
			return false, ""
		}
	}
	if r.SrcLocal != 0 {
		switch {
		case q.From == "" || q.Local == nil:
			conds = append(conds, map[bool]string{true: "the source is this node", false: "the source is not this node"}[r.SrcLocal > 0])
		case q.Local(q.From) != (r.SrcLocal > 0):
			return false, ""
		}
	}
	return true, strings.Join(conds, " and ")
}

func contains(cidr, ip string) bool {
	a := net.ParseIP(ip)
	if a == nil {
		return false
	}
	if !strings.Contains(cidr, "/") {
		return net.ParseIP(cidr).Equal(a)
	}
	_, n, err := net.ParseCIDR(cidr)
	return err == nil && n.Contains(a)
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " and " + b
}
