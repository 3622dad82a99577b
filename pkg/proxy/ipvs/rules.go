package ipvs

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/proxy/ipset"
)

// Chains with kube-proxy's IPVS-mode names.
const (
	kubeServices             = "KUBE-SERVICES"
	kubePostrouting          = "KUBE-POSTROUTING"
	kubeNodePort             = "KUBE-NODE-PORT"
	kubeLoadBalancer         = "KUBE-LOAD-BALANCER"
	kubeMarkMasq             = "KUBE-MARK-MASQ"
	kubeForward              = "KUBE-FORWARD"
	kubeProxyFirewall        = "KUBE-PROXY-FIREWALL"
	kubeSourceRangesFirewall = "KUBE-SOURCE-RANGES-FIREWALL"
	kubeIPVSFilter           = "KUBE-IPVS-FILTER"
	kubeIPVSOutFilter        = "KUBE-IPVS-OUT-FILTER"
	masqMark                 = "0x4000"
	masqueradeComment        = `"kubernetes service traffic requiring SNAT"`
	forwardComment           = `"kubernetes forwarding rules"`
	forwardConntrackComment  = `"kubernetes forwarding conntrack rule"`
	tablesNat                = "nat"
	tablesFilter             = "filter"
)

// Our chains, by table.
var (
	natChains    = []string{kubeServices, kubePostrouting, kubeNodePort, kubeLoadBalancer, kubeMarkMasq}
	filterChains = []string{kubeForward, kubeNodePort, kubeProxyFirewall, kubeSourceRangesFirewall, kubeIPVSFilter, kubeIPVSOutFilter}
)

// jump is a rule in a built-in chain sending traffic into ours, kube-proxy's in IPVS mode.
type jump struct{ table, chain, target, comment string }

var jumps = []jump{
	{tablesNat, "OUTPUT", kubeServices, "kubernetes service portals"},
	{tablesNat, "PREROUTING", kubeServices, "kubernetes service portals"},
	{tablesNat, "POSTROUTING", kubePostrouting, "kubernetes postrouting rules"},
	{tablesFilter, "FORWARD", kubeForward, "kubernetes forwarding rules"},
	{tablesFilter, "INPUT", kubeNodePort, "kubernetes health check rules"},
	{tablesFilter, "INPUT", kubeProxyFirewall, "kube-proxy firewall rules"},
	{tablesFilter, "FORWARD", kubeProxyFirewall, "kube-proxy firewall rules"},
	{tablesFilter, "INPUT", kubeIPVSFilter, "kubernetes ipvs access filter"},
	{tablesFilter, "OUTPUT", kubeIPVSOutFilter, "kubernetes ipvs access filter"},
}

// args is the jump's rule as arguments of the iptables command.
func (j jump) args() []string {
	return []string{"-m", "comment", "--comment", j.comment, "-j", j.target}
}

// text is the jump's rule as iptables-save prints it and iptables-restore reads it.
func (j jump) text() string { return `-m comment --comment "` + j.comment + `" -j ` + j.target }

// setRules are the rules that are one set match each, written only when their set has
// entries (kube-proxy's ipsetWithIptablesChain); local sets come before their general one.
var setRules = []struct {
	set, table, from, to, match, proto string
}{
	{ipset.LoopBack, tablesNat, kubePostrouting, "MASQUERADE", "dst,dst,src", ""},
	{ipset.LoadBalancer, tablesNat, kubeServices, kubeLoadBalancer, "dst,dst", ""},
	{ipset.LoadBalancerLocal, tablesNat, kubeLoadBalancer, "RETURN", "dst,dst", ""},
	{ipset.NodePortLocalTCP, tablesNat, kubeNodePort, "RETURN", "dst", "tcp"},
	{ipset.NodePortTCP, tablesNat, kubeNodePort, kubeMarkMasq, "dst", "tcp"},
	{ipset.NodePortLocalUDP, tablesNat, kubeNodePort, "RETURN", "dst", "udp"},
	{ipset.NodePortUDP, tablesNat, kubeNodePort, kubeMarkMasq, "dst", "udp"},
	{ipset.NodePortLocalSCTP, tablesNat, kubeNodePort, "RETURN", "dst,dst", "sctp"},
	{ipset.NodePortSCTP, tablesNat, kubeNodePort, kubeMarkMasq, "dst,dst", "sctp"},
	{ipset.LoadBalancerFW, tablesFilter, kubeProxyFirewall, kubeSourceRangesFirewall, "dst,dst", ""},
	{ipset.LoadBalancerSourceCIDR, tablesFilter, kubeSourceRangesFirewall, "RETURN", "dst,dst,src", ""},
	{ipset.LoadBalancerSourceIP, tablesFilter, kubeSourceRangesFirewall, "RETURN", "dst,dst,src", ""},
}

// rules are the two tables' rules, by chain, in writing order.
type rules struct {
	nat, filter map[string][]string
}

func (r *rules) add(table, chain string, args ...string) {
	m := r.nat
	if table == tablesFilter {
		m = r.filter
	}
	m[chain] = append(m[chain], "-A "+chain+" "+strings.Join(args, " "))
}

func setComment(s *ipset.Set) []string {
	return []string{"-m", "comment", "--comment", `"` + s.Comment + `"`}
}

func matchSet(name, match string) []string { return []string{"-m", "set", "--match-set", name, match} }

// buildRules writes kube-proxy's IPVS-mode rules; which of them appear depends only on
// which sets have entries, so their number does not grow with the Services (but for the
// node's drops of firewalled load balancers).
func buildRules(cfg Config, sets map[string]*ipset.Set) *rules {
	r := &rules{nat: map[string][]string{}, filter: map[string][]string{}}
	nonEmpty := func(n string) bool { return len(sets[n].Entries) > 0 }

	// Connections to localhost never go through IPVS.
	r.add(tablesNat, kubeServices, "-s", "127.0.0.0/8", "-j", "RETURN")
	for _, sr := range setRules {
		if !nonEmpty(sr.set) {
			continue
		}
		args := []string{}
		if sr.proto != "" {
			args = append(args, "-p", sr.proto)
		}
		args = append(args, setComment(sets[sr.set])...)
		args = append(args, matchSet(sr.set, sr.match)...)
		r.add(sr.table, sr.from, append(args, "-j", sr.to)...)
	}
	if nonEmpty(ipset.ClusterIP) {
		args := append(setComment(sets[ipset.ClusterIP]), "-m", "set", "--match-set", ipset.ClusterIP)
		switch {
		case cfg.MasqueradeAll:
			r.add(tablesNat, kubeServices, append(args, "dst,dst", "-j", kubeMarkMasq)...)
		case cfg.ClusterCIDR != "":
			// Off-cluster traffic to a service address is masqueraded, so replies come back.
			r.add(tablesNat, kubeServices, append(args, "dst,dst", "!", "-s", cfg.ClusterCIDR, "-j", kubeMarkMasq)...)
		default:
			// Without the cluster CIDR: masquerade what the node sends from a virtual address
			// (the kernel picks the address of kube-ipvs0 as source when a node process
			// connects to a service).
			r.add(tablesNat, kubeServices, append(args, "src,dst", "-j", kubeMarkMasq)...)
		}
	}
	externalAccept := func(args []string) {
		r.add(tablesNat, kubeServices, append(append([]string{}, args...),
			"-m", "physdev", "!", "--physdev-is-in", "-m", "addrtype", "!", "--src-type", "LOCAL", "-j", "ACCEPT")...)
		r.add(tablesNat, kubeServices, append(append([]string{}, args...), "-m", "addrtype", "--dst-type", "LOCAL", "-j", "ACCEPT")...)
	}
	if nonEmpty(ipset.ExternalIP) {
		args := append(setComment(sets[ipset.ExternalIP]), matchSet(ipset.ExternalIP, "dst,dst")...)
		r.add(tablesNat, kubeServices, append(append([]string{}, args...), "-j", kubeMarkMasq)...)
		externalAccept(args)
	}
	if nonEmpty(ipset.ExternalIPLocal) {
		externalAccept(append(setComment(sets[ipset.ExternalIPLocal]), matchSet(ipset.ExternalIPLocal, "dst,dst")...))
	}
	r.add(tablesNat, kubeServices, "-m", "addrtype", "--dst-type", "LOCAL", "-j", kubeNodePort)
	r.add(tablesNat, kubeLoadBalancer, "-j", kubeMarkMasq)
	// Accept what goes to a virtual server, whatever other rules would do (last in the chain).
	for _, s := range []string{ipset.ClusterIP, ipset.LoadBalancer} {
		if nonEmpty(s) {
			r.add(tablesNat, kubeServices, append(matchSet(s, "dst,dst"), "-j", "ACCEPT")...)
		}
	}
	r.add(tablesFilter, kubeForward, "-m", "comment", "--comment", forwardComment, "-m", "mark", "--mark", masqMark+"/"+masqMark, "-j", "ACCEPT")
	r.add(tablesFilter, kubeForward, "-m", "comment", "--comment", forwardConntrackComment, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT")
	r.add(tablesFilter, kubeNodePort, append(append(setComment(sets[ipset.HealthCheckNodePort]), matchSet(ipset.HealthCheckNodePort, "dst")...), "-j", "ACCEPT")...)
	if nonEmpty(ipset.LoadBalancerFW) {
		r.add(tablesFilter, kubeSourceRangesFirewall, "-j", "DROP")
	}
	// IPVS takes the node's own connections to a virtual address on their way out, before
	// the INPUT firewall: those to a firewalled load balancer the node may not reach are
	// dropped there (kube-proxy's lbNoNodeAccessIPPortProtocolEntries, kubernetes#119656).
	// These rules are the only ones that grow with the Services.
	for _, e := range slices.Sorted(maps.Keys(sets[ipset.LoadBalancerFW].Entries)) {
		ip, protoPort, _ := strings.Cut(e, ",")
		proto, port, _ := strings.Cut(protoPort, ":")
		if !sets[ipset.LoadBalancerSourceIP].Entries[e+","+ip] {
			r.add(tablesFilter, kubeIPVSOutFilter, "-s", ip, "-m", "ipvs", "--vaddr", ip, "--vproto", proto, "--vport", port, "-j", "DROP")
		}
	}
	// Only the service ports answer on a virtual address (kubernetes#72236).
	for _, s := range []string{ipset.LoadBalancer, ipset.ClusterIP, ipset.ExternalIP, ipset.ExternalIPLocal} {
		r.add(tablesFilter, kubeIPVSFilter, append(matchSet(s, "dst,dst"), "-j", "RETURN")...)
	}
	r.add(tablesFilter, kubeIPVSFilter, append(matchSet(ipset.HealthCheckNodePort, "dst"), "-j", "RETURN")...)
	r.add(tablesFilter, kubeIPVSFilter, append([]string{"-m", "conntrack", "--ctstate", "NEW"}, append(matchSet(ipset.IPVSIPs, "dst"), "-j", "REJECT")...)...)

	r.add(tablesNat, kubePostrouting, "-m", "mark", "!", "--mark", masqMark+"/"+masqMark, "-j", "RETURN")
	r.add(tablesNat, kubePostrouting, "-j", "MARK", "--xor-mark", masqMark)
	r.add(tablesNat, kubePostrouting, "-m", "comment", "--comment", masqueradeComment, "-j", "MASQUERADE", "--random-fully")
	r.add(tablesNat, kubeMarkMasq, "-j", "MARK", "--or-mark", masqMark)
	return r
}

// restore is the iptables-restore --noflush input writing both tables: each of our chains
// declared (which flushes it) and refilled.
func (r *rules) restore() string {
	var b strings.Builder
	write := func(table string, chains []string, m map[string][]string) {
		fmt.Fprintf(&b, "*%s\n", table)
		for _, c := range chains {
			fmt.Fprintf(&b, ":%s - [0:0]\n", c)
		}
		for _, c := range chains {
			for _, rule := range m[c] {
				b.WriteString(rule)
				b.WriteByte('\n')
			}
		}
		b.WriteString("COMMIT\n")
	}
	write(tablesFilter, filterChains, r.filter)
	write(tablesNat, natChains, r.nat)
	return b.String()
}

// count is the number of rules in a table.
func count(m map[string][]string) int {
	n := 0
	for _, rs := range m {
		n += len(rs)
	}
	return n
}
