// Package iptables is miniproxy's iptables proxier: Services become kube-proxy's chains
// (KUBE-SERVICES, KUBE-SVC-*, KUBE-SEP-*, KUBE-EXT-*, KUBE-SVL-*, KUBE-NODEPORTS,
// KUBE-MARK-MASQ, KUBE-POSTROUTING in nat; KUBE-SERVICES, KUBE-EXTERNAL-SERVICES,
// KUBE-FORWARD, KUBE-NODEPORTS, KUBE-PROXY-FIREWALL in filter), written by one
// iptables-restore per sync.
package iptables

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/minik8s/minik8s/pkg/proxy"
)

// Chains and marks with kube-proxy's names, so iptables-save reads as on any cluster.
const (
	kubeServices         = "KUBE-SERVICES"
	kubeNodePorts        = "KUBE-NODEPORTS"
	kubePostrouting      = "KUBE-POSTROUTING"
	kubeMarkMasq         = "KUBE-MARK-MASQ"
	kubeExternalServices = "KUBE-EXTERNAL-SERVICES"
	kubeForward          = "KUBE-FORWARD"
	kubeProxyFirewall    = "KUBE-PROXY-FIREWALL"
	kubeProxyCanary      = "KUBE-PROXY-CANARY"
	// kubeletFirewall holds kube-proxy's copy of the kubelet's rule against martians to
	// 127.0.0.0/8, which route_localnet (NodePorts on localhost) would let in.
	kubeletFirewall = "KUBE-FIREWALL"
	masqMark        = "0x4000/0x4000"
)

// hash16 is kube-proxy's chain-name hash: base32 of sha256, 16 characters (which are the
// encoding of the first 10 bytes alone: base32 works in independent 5-byte groups).
func hash16(s string) string {
	sum := sha256.Sum256([]byte(s))
	var out [16]byte
	base32.StdEncoding.Encode(out[:], sum[:10])
	return string(out[:])
}

func protocol(sp *proxy.ServicePort) string { return strings.ToLower(string(sp.Protocol)) }

func svcChain(sp *proxy.ServicePort) string { return "KUBE-SVC-" + hash16(sp.Name+protocol(sp)) }
func extChain(sp *proxy.ServicePort) string { return "KUBE-EXT-" + hash16(sp.Name+protocol(sp)) }
func svlChain(sp *proxy.ServicePort) string { return "KUBE-SVL-" + hash16(sp.Name+protocol(sp)) }
func fwChain(sp *proxy.ServicePort) string  { return "KUBE-FW-" + hash16(sp.Name+protocol(sp)) }
func sepChain(sp *proxy.ServicePort, ep proxy.Endpoint) string {
	return "KUBE-SEP-" + hash16(sp.Name+protocol(sp)+ep.String())
}

// Config is what shapes the rules beyond the Services themselves.
type Config struct {
	ClusterCIDR   string // traffic from outside it to a ClusterIP is masqueraded
	MasqueradeAll bool
}

// table is one iptables table: its chains in order, each with its rules.
type table struct {
	name   string
	order  []string
	chains map[string]*chainText
}

// chainText is a chain's rules as iptables-restore reads them, one per line: built in one
// growing buffer per chain rather than a string per rule (a 10 000-service sync is 80 000
// rules; this keeps the proxier's garbage, and so its RSS, small).
type chainText struct {
	text  []byte
	rules int
	// sum, once summed, is the hash of text: what a partial sync compares with the chain
	// as last written.
	sum    uint64
	summed bool
}

func newTable(name string, chains ...string) *table {
	t := &table{name: name, chains: map[string]*chainText{}}
	for _, c := range chains {
		t.chain(c)
	}
	return t
}

// chain declares c (once) so it is written even when empty.
func (t *table) chain(c string) *chainText {
	ct, ok := t.chains[c]
	if !ok {
		ct = &chainText{text: make([]byte, 0, 256)} // a per-service chain's rules fit
		t.order = append(t.order, c)
		t.chains[c] = ct
	}
	return ct
}

// put adds chain c laid out elsewhere.
func (t *table) put(c string, ct *chainText) {
	if _, ok := t.chains[c]; !ok {
		t.order = append(t.order, c)
	}
	t.chains[c] = ct
}

// add appends a rule to chain c; args are joined as iptables-restore reads them.
func (t *table) add(c string, args ...string) {
	ct := t.chain(c)
	ct.text = append(append(ct.text, "-A "...), c...)
	for _, a := range args {
		ct.text = append(append(ct.text, ' '), a...)
	}
	ct.text = append(ct.text, '\n')
	ct.rules++
}

func comment(text string) string { return `-m comment --comment "` + text + `"` }

// sum is a hash of chain c's rules: what a partial sync compares to skip unchanged chains
// (a hash, not the text, so the proxier does not hold a second copy of the table).
func (t *table) sum(c string) uint64 {
	ct := t.chains[c]
	if !ct.summed {
		h := fnv.New64a()
		_, _ = h.Write(ct.text)
		ct.sum, ct.summed = h.Sum64(), true
	}
	return ct.sum
}

func (t *table) rules() int {
	n := 0
	for _, ct := range t.chains {
		n += ct.rules
	}
	return n
}

// ruleSet is the whole desired state of both tables.
type ruleSet struct {
	filter, nat *table
}

// buildRules lays out every service port as kube-proxy's iptables proxier does.
func buildRules(cfg Config, ports []proxy.ServicePort) ruleSet {
	return (&builder{cfg: cfg}).build(ports)
}

// baseTables are both tables with our top-level chains and their fixed rules.
func baseTables() (filter, nat *table) {
	filter = newTable("filter", kubeServices, kubeExternalServices, kubeForward, kubeNodePorts, kubeProxyFirewall, kubeletFirewall)
	nat = newTable("nat", kubeServices, kubeNodePorts, kubePostrouting, kubeMarkMasq)
	nat.add(kubePostrouting, "-m mark ! --mark "+masqMark, "-j RETURN")
	nat.add(kubePostrouting, "-j MARK --xor-mark 0x4000")
	nat.add(kubePostrouting, comment("kubernetes service traffic requiring SNAT"), "-j MASQUERADE --random-fully")
	nat.add(kubeMarkMasq, "-j MARK --or-mark 0x4000")
	filter.add(kubeForward, "-m conntrack --ctstate INVALID", "-j DROP")
	filter.add(kubeForward, comment("kubernetes forwarding rules"), "-m mark --mark "+masqMark, "-j ACCEPT")
	filter.add(kubeForward, comment("kubernetes forwarding conntrack rule"), "-m conntrack --ctstate RELATED,ESTABLISHED", "-j ACCEPT")
	filter.add(kubeletFirewall, comment("block incoming localnet connections"), "-d 127.0.0.0/8 ! -s 127.0.0.0/8",
		"-m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT", "-j DROP")
	return filter, nat
}

func addServicePort(cfg Config, filter, nat *table, sp *proxy.ServicePort) {
	proto := protocol(sp)
	match := func(dst string, port int32) string {
		return fmt.Sprintf("-m %s -p %s -d %s/32 --dport %d", proto, proto, dst, port)
	}
	clusterEPs := sp.Usable(sp.InternalLocal)
	allEPs := sp.Usable(false)
	externalEPs := sp.Usable(sp.ExternalLocal)
	svc, ext := svcChain(sp), extChain(sp)
	// Where traffic to the cluster IP goes: the cluster chain, or the local-endpoints chain
	// for internalTrafficPolicy Local.
	clusterTarget := svc
	if sp.InternalLocal {
		clusterTarget = svlChain(sp)
	}
	hasExternal := sp.NodePort != 0 || len(sp.ExternalIPs) > 0 || len(sp.LoadBalancerIPs) > 0
	// kube-proxy's UsesClusterEndpoints: the cluster chain serves internal traffic under
	// policy Cluster, and external traffic's short-circuit whatever its policy.
	usesCluster := !sp.InternalLocal || hasExternal

	// Cluster IP.
	if len(clusterEPs) > 0 {
		nat.add(kubeServices, comment(sp.Name+" cluster IP"), match(sp.ClusterIP, sp.Port), "-j", clusterTarget)
	} else {
		// As kube-proxy: REJECT without endpoints; DROP when only this node lacks them
		// (internalTrafficPolicy Local).
		reason, target := "has no endpoints", "REJECT"
		if sp.InternalLocal && len(allEPs) > 0 {
			reason, target = "has no local endpoints", "DROP"
		}
		filter.add(kubeServices, comment(sp.Name+" "+reason), match(sp.ClusterIP, sp.Port), "-j", target)
	}
	// External addresses (external IPs, load balancer IPs) and the node port: to KUBE-EXT
	// while the Service has endpoints anywhere, so that with externalTrafficPolicy Local and
	// none here this node's pods and the node itself still reach it (kube-proxy's
	// short-circuit); what KUBE-EXT does not translate meets KUBE-EXTERNAL-SERVICES.
	externalTarget := ext
	if len(allEPs) == 0 {
		externalTarget = ""
	}
	for _, ip := range sp.ExternalIPs {
		addExternal(filter, nat, sp, comment(sp.Name+" external IP"), match(ip, sp.Port), externalTarget, allEPs, externalEPs)
	}
	// loadBalancerSourceRanges: the load balancer IPs go through KUBE-FW, which sends the
	// allowed sources on to KUBE-EXT; what it does not DNAT meets the DROP in the filter
	// table's KUBE-PROXY-FIREWALL (kube-proxy's layout).
	usesFW := externalTarget != "" && len(sp.LoadBalancerIPs) > 0 && len(sp.SourceRanges) > 0
	lbTarget := externalTarget
	if usesFW {
		lbTarget = fwChain(sp)
	}
	for _, ip := range sp.LoadBalancerIPs {
		addExternal(filter, nat, sp, comment(sp.Name+" loadbalancer IP"), match(ip, sp.Port), lbTarget, allEPs, externalEPs)
		if usesFW {
			filter.add(kubeProxyFirewall, comment(sp.Name+" traffic not accepted by "+lbTarget), match(ip, sp.Port), "-j DROP")
		}
	}
	if usesFW {
		for _, cidr := range sp.SourceRanges {
			nat.add(lbTarget, comment(sp.Name+" loadbalancer IP"), "-s "+cidr, "-j", ext)
		}
		// A node asking for a load balancer IP that is a local address of its own sends
		// from that address: let it in when the ranges let the node in.
		if sp.AllowFromNode {
			for _, ip := range sp.LoadBalancerIPs {
				nat.add(lbTarget, comment(sp.Name+" loadbalancer IP"), "-s "+ip, "-j", ext)
			}
		}
		nat.add(lbTarget, comment("other traffic to "+sp.Name+" will be dropped by KUBE-PROXY-FIREWALL"))
	}
	if sp.NodePort != 0 {
		m := fmt.Sprintf("-m %s -p %s --dport %d", proto, proto, sp.NodePort)
		if externalTarget != "" {
			nat.add(kubeNodePorts, comment(sp.Name), m, "-j", externalTarget)
		}
		if len(externalEPs) == 0 {
			filter.add(kubeExternalServices, comment(sp.Name+" "+noEndpoints(sp, allEPs)), "-m addrtype --dst-type LOCAL", m, "-j", refusal(sp, allEPs))
		}
	}
	if sp.HealthCheckNodePort != 0 {
		// Accepted whether this node has endpoints or not: a 503 is the load balancer's answer.
		filter.add(kubeNodePorts, comment(sp.Name+" health check node port"), fmt.Sprintf("-m tcp -p tcp --dport %d", sp.HealthCheckNodePort), "-j ACCEPT")
	}

	// The chain the cluster IP jumps to (KUBE-SVC, or KUBE-SVL under internalTrafficPolicy
	// Local) first masquerades cluster IP traffic that does not come from a pod, as
	// kube-proxy's internalTrafficChain; then KUBE-SVC and KUBE-SVL pick an endpoint.
	if len(clusterEPs) > 0 {
		if cfg.MasqueradeAll {
			nat.add(clusterTarget, comment(sp.Name+" cluster IP"), match(sp.ClusterIP, sp.Port), "-j", kubeMarkMasq)
		} else if cfg.ClusterCIDR != "" {
			nat.add(clusterTarget, comment(sp.Name+" cluster IP"), match(sp.ClusterIP, sp.Port), "! -s "+cfg.ClusterCIDR, "-j", kubeMarkMasq)
		}
	}
	if usesCluster && len(allEPs) > 0 {
		addBalancing(nat, sp, svc, allEPs)
	}
	if sp.InternalLocal || sp.ExternalLocal {
		if local := sp.Usable(true); len(local) > 0 {
			addBalancing(nat, sp, svlChain(sp), local)
		}
	}
	// KUBE-EXT: masquerade external traffic unless the policy is Local (client IP kept).
	if hasExternal && externalTarget != "" {
		if !sp.ExternalLocal {
			nat.add(ext, comment("masquerade traffic for "+sp.Name+" external destinations"), "-j", kubeMarkMasq)
			nat.add(ext, "-j", svc)
		} else {
			if cfg.ClusterCIDR != "" {
				nat.add(ext, comment("pod traffic for "+sp.Name+" external destinations"), "-s "+cfg.ClusterCIDR, "-j", svc)
			}
			nat.add(ext, comment("masquerade LOCAL traffic for "+sp.Name+" external destinations"), "-m addrtype --src-type LOCAL", "-j", kubeMarkMasq)
			nat.add(ext, comment("route LOCAL traffic for "+sp.Name+" external destinations"), "-m addrtype --src-type LOCAL", "-j", svc)
			if len(externalEPs) > 0 {
				nat.add(ext, "-j", svlChain(sp))
			}
		}
	}
	// KUBE-SEP: hairpin masquerade, then DNAT (remembering the client for affinity).
	if usesCluster {
		for _, ep := range allEPs {
			addEndpoint(nat, sp, ep)
		}
	}
	if sp.InternalLocal || sp.ExternalLocal {
		for _, ep := range sp.Usable(true) {
			addEndpoint(nat, sp, ep)
		}
	}
}

func noEndpoints(sp *proxy.ServicePort, all []proxy.Endpoint) string {
	if sp.ExternalLocal && len(all) > 0 {
		return "has no local endpoints"
	}
	return "has no endpoints"
}

// refusal is what external traffic without endpoints meets: REJECT, so clients fail at
// once; DROP when only this node lacks endpoints (externalTrafficPolicy Local), so a load
// balancer's health check moves traffic to a node that has some.
func refusal(sp *proxy.ServicePort, all []proxy.Endpoint) string {
	if sp.ExternalLocal && len(all) > 0 {
		return "DROP"
	}
	return "REJECT"
}

// addExternal sends an external address to target ("": none) and, when no endpoint
// serves external traffic here, refuses what target did not translate.
func addExternal(filter, nat *table, sp *proxy.ServicePort, cmt, match, target string, all, external []proxy.Endpoint) {
	if target != "" {
		nat.add(kubeServices, cmt, match, "-j", target)
	}
	if len(external) == 0 {
		filter.add(kubeExternalServices, comment(sp.Name+" "+noEndpoints(sp, all)), match, "-j", refusal(sp, all))
	}
}

// addBalancing sends chain's traffic to one of eps: affinity first, then at random with
// probability 1/(n-i) for the i-th, so each is equally likely.
func addBalancing(nat *table, sp *proxy.ServicePort, chain string, eps []proxy.Endpoint) {
	nat.chain(chain)
	if sp.AffinitySeconds > 0 {
		for _, ep := range eps {
			sep := sepChain(sp, ep)
			nat.add(chain, comment(sp.Name+" -> "+ep.String()), fmt.Sprintf("-m recent --name %s --rcheck --seconds %d --reap", sep, sp.AffinitySeconds), "-j", sep)
		}
	}
	n := len(eps)
	for i, ep := range eps {
		args := []string{comment(sp.Name + " -> " + ep.String())}
		if i < n-1 {
			args = append(args, fmt.Sprintf("-m statistic --mode random --probability %0.10f", 1.0/float64(n-i)))
		}
		nat.add(chain, append(args, "-j", sepChain(sp, ep))...)
	}
}

func addEndpoint(nat *table, sp *proxy.ServicePort, ep proxy.Endpoint) {
	sep := sepChain(sp, ep)
	if _, done := nat.chains[sep]; done {
		return
	}
	proto := protocol(sp)
	nat.add(sep, comment(sp.Name), "-s "+ep.IP+"/32", "-j", kubeMarkMasq)
	args := []string{comment(sp.Name)}
	if sp.AffinitySeconds > 0 { // before the protocol match, as kube-proxy writes it
		args = append(args, "-m recent --name "+sep+" --set")
	}
	nat.add(sep, append(args, fmt.Sprintf("-m %s -p %s -j DNAT --to-destination %s", proto, proto, ep.String()))...)
}
