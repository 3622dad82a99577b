package iptables

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/proxy"
	corev1 "k8s.io/api/core/v1"
)

func render(rs ruleSet) string {
	var b strings.Builder
	for _, t := range []*table{rs.filter, rs.nat} {
		for _, c := range t.order {
			b.WriteString(":" + c + "\n")
			b.Write(t.chains[c].text)
		}
	}
	return b.String()
}

func TestRulesForExternalTraffic(t *testing.T) {
	local := proxy.Endpoint{IP: "10.244.1.5", Port: 8080, Ready: true, Serving: true, Local: true}
	remote := proxy.Endpoint{IP: "10.244.2.5", Port: 8080, Ready: true, Serving: true}
	np := proxy.ServicePort{Name: "default/np", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.10", Port: 80, NodePort: 30080,
		Endpoints: []proxy.Endpoint{local, remote}}
	lb := proxy.ServicePort{Name: "default/lb", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.11", Port: 80, NodePort: 30081,
		LoadBalancerIPs: []string{"10.200.0.200"}, ExternalLocal: true, Endpoints: []proxy.Endpoint{local, remote}}
	farOnly := proxy.ServicePort{Name: "default/far", Protocol: corev1.ProtocolUDP, ClusterIP: "10.96.0.12", Port: 53, NodePort: 30082,
		ExternalLocal: true, Endpoints: []proxy.Endpoint{remote}}
	none := proxy.ServicePort{Name: "default/none", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.13", Port: 80, NodePort: 30083}
	internalFar := proxy.ServicePort{Name: "default/ifar", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.15", Port: 80,
		InternalLocal: true, Endpoints: []proxy.Endpoint{remote}}
	terminating := proxy.ServicePort{Name: "default/drain", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.14", Port: 80,
		Endpoints: []proxy.Endpoint{{IP: "10.244.3.5", Port: 8080, Serving: true, Terminating: true}}}
	out := render(buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, []proxy.ServicePort{np, lb, farOnly, none, terminating, internalFar}))
	for _, want := range []string{
		// NodePort, cluster policy: through KUBE-EXT, masqueraded, to every endpoint.
		"-A KUBE-NODEPORTS " + comment("default/np") + " -m tcp -p tcp --dport 30080 -j " + extChain(&np),
		"-A " + extChain(&np) + " " + comment("masquerade traffic for default/np external destinations") + " -j KUBE-MARK-MASQ",
		"-A " + extChain(&np) + " -j " + svcChain(&np),
		// LoadBalancer IP with policy Local: client IP kept, only the local endpoint.
		"-A KUBE-SERVICES " + comment("default/lb loadbalancer IP") + " -m tcp -p tcp -d 10.200.0.200/32 --dport 80 -j " + extChain(&lb),
		"-A " + extChain(&lb) + " -j " + svlChain(&lb),
		"-A " + svlChain(&lb) + " " + comment("default/lb -> 10.244.1.5:8080") + " -j " + sepChain(&lb, local),
		// Local policy with no local endpoint: dropped on this node, still served in the cluster.
		"-A KUBE-EXTERNAL-SERVICES " + comment("default/far has no local endpoints") + " -m addrtype --dst-type LOCAL -m udp -p udp --dport 30082 -j DROP",
		"-A KUBE-SERVICES " + comment("default/far cluster IP") + " -m udp -p udp -d 10.96.0.12/32 --dport 53 -j " + svcChain(&farOnly),
		// internalTrafficPolicy Local with no local endpoint: the cluster IP drops, as
		// kube-proxy's (a client times out; REJECT is for no endpoints at all).
		"-A KUBE-SERVICES " + comment("default/ifar has no local endpoints") + " -m tcp -p tcp -d 10.96.0.15/32 --dport 80 -j DROP",
		// No endpoints at all: rejected.
		"-A KUBE-SERVICES " + comment("default/none has no endpoints") + " -m tcp -p tcp -d 10.96.0.13/32 --dport 80 -j REJECT",
		"-A KUBE-EXTERNAL-SERVICES " + comment("default/none has no endpoints") + " -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30083 -j REJECT",
		// Only a terminating but serving endpoint: used as a fallback.
		"-j DNAT --to-destination 10.244.3.5:8080",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("rules lack\n  %s\nin\n%s", want, out)
		}
	}
	if strings.Contains(out, "-A "+svlChain(&lb)+" "+comment("default/lb -> 10.244.2.5:8080")) {
		t.Errorf("the local-endpoints chain sends to a remote endpoint")
	}
	if last := strings.LastIndex(out, "-A KUBE-SERVICES "); !strings.HasPrefix(out[last:], "-A KUBE-SERVICES "+comment("kubernetes service nodeports; NOTE: this must be the last rule in this chain")) {
		t.Errorf("the KUBE-NODEPORTS jump is not the last rule of KUBE-SERVICES")
	}
}

func TestChainNamesMatchKubeProxy(t *testing.T) {
	// The names kube-proxy's own tests expect for service port "ns1/svc1:p80" over TCP and
	// its endpoint 10.180.0.1:80, so iptables-save reads the same on both.
	sp := &proxy.ServicePort{Name: "ns1/svc1:p80", Protocol: corev1.ProtocolTCP}
	if got := svcChain(sp); got != "KUBE-SVC-XPGD46QRK7WJZT7O" {
		t.Errorf("service chain %s, want KUBE-SVC-XPGD46QRK7WJZT7O", got)
	}
	if got := sepChain(sp, proxy.Endpoint{IP: "10.180.0.1", Port: 80}); got != "KUBE-SEP-SXIVWICOYRO3J4NJ" {
		t.Errorf("endpoint chain %s, want KUBE-SEP-SXIVWICOYRO3J4NJ", got)
	}
}

func TestRulesForLoadBalancerSourceRanges(t *testing.T) {
	ep := proxy.Endpoint{IP: "10.244.1.5", Port: 8080, Ready: true, Serving: true}
	lb := proxy.ServicePort{Name: "default/lb:http", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.20", Port: 80, NodePort: 30090,
		LoadBalancerIPs: []string{"10.200.0.200"}, SourceRanges: []string{"192.168.0.0/16", "10.1.0.0/24"}, Endpoints: []proxy.Endpoint{ep}}
	open := lb
	open.Name, open.ClusterIP, open.LoadBalancerIPs, open.SourceRanges = "default/open:http", "10.96.0.21", []string{"10.200.0.201"}, nil
	fromNode := lb
	fromNode.Name, fromNode.ClusterIP, fromNode.LoadBalancerIPs, fromNode.AllowFromNode = "default/fromnode:http", "10.96.0.22", []string{"10.200.0.202"}, true
	out := render(buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, []proxy.ServicePort{lb, open, fromNode}))
	fw, ext := fwChain(&lb), extChain(&lb)
	if !strings.HasPrefix(fw, "KUBE-FW-") || len(fw) != len("KUBE-FW-")+16 {
		t.Fatalf("firewall chain name %q", fw)
	}
	for _, want := range []string{
		"-A KUBE-SERVICES " + comment("default/lb:http loadbalancer IP") + " -m tcp -p tcp -d 10.200.0.200/32 --dport 80 -j " + fw,
		"-A " + fw + " " + comment("default/lb:http loadbalancer IP") + " -s 192.168.0.0/16 -j " + ext,
		"-A " + fw + " " + comment("default/lb:http loadbalancer IP") + " -s 10.1.0.0/24 -j " + ext,
		"-A " + fw + " " + comment("other traffic to default/lb:http will be dropped by KUBE-PROXY-FIREWALL") + "\n",
		"-A KUBE-PROXY-FIREWALL " + comment("default/lb:http traffic not accepted by "+fw) + " -m tcp -p tcp -d 10.200.0.200/32 --dport 80 -j DROP",
		// Without ranges the load balancer IP goes straight to KUBE-EXT.
		"-A KUBE-SERVICES " + comment("default/open:http loadbalancer IP") + " -m tcp -p tcp -d 10.200.0.201/32 --dport 80 -j " + extChain(&open),
		// The node in the ranges: its packets from the load balancer IP, after the ranges.
		"-A " + fwChain(&fromNode) + " " + comment("default/fromnode:http loadbalancer IP") + " -s 10.1.0.0/24 -j " + extChain(&fromNode) + "\n" +
			"-A " + fwChain(&fromNode) + " " + comment("default/fromnode:http loadbalancer IP") + " -s 10.200.0.202 -j " + extChain(&fromNode) + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rules lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, fwChain(&open)) {
		t.Errorf("a service without source ranges got a firewall chain")
	}
	if strings.Contains(out, "-s 10.200.0.200") {
		t.Errorf("the load balancer IP is let in as a source though the node is not in the ranges:\n%s", out)
	}
	// The node port is not filtered: kube-proxy applies the ranges to the load balancer IPs.
	if !strings.Contains(out, "-A KUBE-NODEPORTS "+comment("default/lb:http")+" -m tcp -p tcp --dport 30090 -j "+ext) {
		t.Errorf("node port does not go to %s:\n%s", ext, out)
	}
}

// kernel is what the tables hold, chain by chain, after a builder's writes are applied.
type kernel [2]map[string]string

func (k kernel) apply(rs ruleSet, stale [2][]string) {
	for ti, t := range [2]*table{rs.filter, rs.nat} {
		if k[ti] == nil {
			k[ti] = map[string]string{}
		}
		for _, c := range t.order {
			k[ti][c] = string(t.chains[c].text)
		}
		for _, c := range stale[ti] {
			delete(k[ti], c)
		}
	}
}

// An update writes only the chains that changed and deletes the stale ones, and what the
// tables then hold is what a layout from scratch gives.
func TestBuilderUpdatesOnlyChanges(t *testing.T) {
	port := func(i int, ip string) proxy.ServicePort {
		return proxy.ServicePort{Name: fmt.Sprintf("default/s%d:http", i), Protocol: corev1.ProtocolTCP, ClusterIP: fmt.Sprintf("10.96.0.%d", i+1), Port: 80,
			NodePort: int32(30000 + i), Endpoints: []proxy.Endpoint{{IP: ip, Port: 8080, Ready: true, Serving: true}}}
	}
	ports := []proxy.ServicePort{port(0, "10.244.1.1"), port(1, "10.244.1.2"), port(2, "10.244.1.3")}
	b := &builder{cfg: Config{ClusterCIDR: "10.244.0.0/16"}}
	k := kernel{}
	k.apply(b.build(ports), [2][]string{})

	// s1's endpoint replaced: its KUBE-SVC and both KUBE-SEP chains, nothing shared.
	s1 := port(1, "10.244.9.9")
	rs, stale := b.update([]proxy.Change{{Before: ports[1:2], After: []proxy.ServicePort{s1}}})
	if want := []string{svcChain(&s1), sepChain(&s1, s1.Endpoints[0])}; strings.Join(rs.nat.order, ",") != strings.Join(want, ",") || len(rs.filter.order) != 0 {
		t.Errorf("endpoint change writes nat %v filter %v, want nat %v", rs.nat.order, rs.filter.order, want)
	}
	if want := sepChain(&ports[1], ports[1].Endpoints[0]); len(stale[1]) != 1 || stale[1][0] != want {
		t.Errorf("endpoint change deletes %v, want %s", stale, want)
	}
	k.apply(rs, stale)
	ports[1] = s1

	// s2 deleted, s3 added: their chains, and the top-level chains they had lines in.
	s3 := port(3, "10.244.1.4")
	rs, stale = b.update([]proxy.Change{{Before: ports[2:3]}, {After: []proxy.ServicePort{s3}}})
	for _, c := range []string{kubeServices, kubeNodePorts, svcChain(&s3), extChain(&s3)} {
		if _, ok := rs.nat.chains[c]; !ok {
			t.Errorf("adding and deleting a service does not write nat %s (writes %v)", c, rs.nat.order)
		}
	}
	if _, ok := rs.nat.chains[svcChain(&ports[0])]; ok {
		t.Errorf("unchanged %s written", svcChain(&ports[0]))
	}
	if !slices.Contains(stale[1], svcChain(&ports[2])) {
		t.Errorf("deleted service's %s not deleted: %v", svcChain(&ports[2]), stale)
	}
	k.apply(rs, stale)
	ports = []proxy.ServicePort{ports[0], ports[1], s3}

	want := kernel{}
	want.apply(buildRules(b.cfg, ports), [2][]string{})
	for ti := range want {
		for c, text := range want[ti] {
			if k[ti][c] != text {
				t.Errorf("table %d chain %s after updates:\n%s\nfrom scratch:\n%s", ti, c, k[ti][c], text)
			}
		}
		for c := range k[ti] {
			if _, ok := want[ti][c]; !ok {
				t.Errorf("table %d: chain %s left after updates", ti, c)
			}
		}
	}
	if b.totalRules(1) != buildRulesCount(b.cfg, ports) {
		t.Errorf("nat rules counted %d, a fresh layout has %d", b.totalRules(1), buildRulesCount(b.cfg, ports))
	}
}

func buildRulesCount(cfg Config, ports []proxy.ServicePort) int {
	return buildRules(cfg, ports).nat.rules()
}

// externalTrafficPolicy Local on a node without a local endpoint: as kube-proxy, traffic
// from the node's pods and from the node itself still goes through KUBE-EXT, which sends
// it to the cluster chain (the "short-circuit": it acts as if it went out to a load
// balancer and came back to a node with an endpoint); only what else reaches the node
// port or external IP is dropped by KUBE-EXTERNAL-SERVICES.
func TestRulesShortCircuitLocalPolicyWithoutLocalEndpoints(t *testing.T) {
	remote := proxy.Endpoint{IP: "10.244.2.5", Port: 8080, Ready: true, Serving: true}
	far := proxy.ServicePort{Name: "default/far", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.12", Port: 80, NodePort: 30082,
		ExternalIPs: []string{"192.0.2.7"}, ExternalLocal: true, Endpoints: []proxy.Endpoint{remote}}
	out := render(buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, []proxy.ServicePort{far}))
	ext, svc := extChain(&far), svcChain(&far)
	for _, want := range []string{
		"-A KUBE-NODEPORTS " + comment("default/far") + " -m tcp -p tcp --dport 30082 -j " + ext,
		"-A KUBE-SERVICES " + comment("default/far external IP") + " -m tcp -p tcp -d 192.0.2.7/32 --dport 80 -j " + ext,
		"-A " + ext + " " + comment("pod traffic for default/far external destinations") + " -s 10.244.0.0/16 -j " + svc,
		"-A " + ext + " " + comment("masquerade LOCAL traffic for default/far external destinations") + " -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ",
		"-A " + ext + " " + comment("route LOCAL traffic for default/far external destinations") + " -m addrtype --src-type LOCAL -j " + svc,
		"-A KUBE-EXTERNAL-SERVICES " + comment("default/far has no local endpoints") + " -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30082 -j DROP",
		"-A KUBE-EXTERNAL-SERVICES " + comment("default/far has no local endpoints") + " -m tcp -p tcp -d 192.0.2.7/32 --dport 80 -j DROP",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("rules lack\n  %s\nin\n%s", want, out)
		}
	}
	if strings.Contains(out, svlChain(&far)) {
		t.Errorf("rules name a local-endpoints chain without a local endpoint:\n%s", out)
	}
}

// An endpoint the topology hints leave to other nodes (Elsewhere) gets no cluster traffic
// from this one, as kube-proxy's clusterEndpoints; a Local policy still uses it when local.
func TestRulesFollowTopologyHints(t *testing.T) {
	here := proxy.Endpoint{IP: "10.244.1.5", Port: 8080, Ready: true, Serving: true}
	far := proxy.Endpoint{IP: "10.244.2.5", Port: 8080, Ready: true, Serving: true, Elsewhere: true}
	sp := proxy.ServicePort{Name: "default/close", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.10", Port: 80,
		Endpoints: []proxy.Endpoint{here, far}}
	out := render(buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, []proxy.ServicePort{sp}))
	if want := "-A " + svcChain(&sp) + " " + comment("default/close -> 10.244.1.5:8080") + " -j " + sepChain(&sp, here) + "\n"; !strings.Contains(out, want) {
		t.Errorf("rules lack\n  %s\nin\n%s", want, out)
	}
	if strings.Contains(out, "10.244.2.5") {
		t.Errorf("the endpoint hinted elsewhere is in the rules:\n%s", out)
	}
}

// sessionAffinity ClientIP: each endpoint's recent list is checked in KUBE-SVC (the timeout
// in seconds, reaped) and set in its KUBE-SEP before the protocol match, as kube-proxy
// writes them (iptables-save shows them so).
func TestRulesForClientIPAffinity(t *testing.T) {
	ep := proxy.Endpoint{IP: "10.244.1.5", Port: 8080, Ready: true, Serving: true}
	sp := proxy.ServicePort{Name: "default/sticky", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.10", Port: 80, AffinitySeconds: 60,
		Endpoints: []proxy.Endpoint{ep}}
	out := render(buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, []proxy.ServicePort{sp}))
	sep := sepChain(&sp, ep)
	for _, want := range []string{
		"-A " + svcChain(&sp) + " " + comment("default/sticky -> 10.244.1.5:8080") + " -m recent --name " + sep + " --rcheck --seconds 60 --reap -j " + sep,
		"-A " + sep + " " + comment("default/sticky") + " -m recent --name " + sep + " --set -m tcp -p tcp -j DNAT --to-destination 10.244.1.5:8080",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("rules lack\n  %s\nin\n%s", want, out)
		}
	}
}

// internalTrafficPolicy Local on a Service not reachable from outside uses no cluster
// endpoints (kube-proxy's UsesClusterEndpoints): no KUBE-SVC chain and no KUBE-SEP of a
// remote endpoint, only the local ones' KUBE-SVL.
func TestRulesOfInternalLocalUseNoClusterChain(t *testing.T) {
	local := proxy.Endpoint{IP: "10.244.1.5", Port: 8080, Ready: true, Serving: true, Local: true}
	remote := proxy.Endpoint{IP: "10.244.2.5", Port: 8080, Ready: true, Serving: true}
	sp := proxy.ServicePort{Name: "default/itp", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.10", Port: 80, InternalLocal: true,
		Endpoints: []proxy.Endpoint{local, remote}}
	out := render(buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, []proxy.ServicePort{sp}))
	for _, absent := range []string{":" + svcChain(&sp) + "\n", ":" + sepChain(&sp, remote) + "\n"} {
		if strings.Contains(out, absent) {
			t.Errorf("rules have %q, which kube-proxy does not write:\n%s", absent, out)
		}
	}
	for _, want := range []string{
		"-A KUBE-SERVICES " + comment("default/itp cluster IP") + " -m tcp -p tcp -d 10.96.0.10/32 --dport 80 -j " + svlChain(&sp),
		"-A " + svlChain(&sp) + " " + comment("default/itp -> 10.244.1.5:8080") + " -j " + sepChain(&sp, local),
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("rules lack\n  %s\nin\n%s", want, out)
		}
	}
}

// A LoadBalancer with externalTrafficPolicy Local: its health check node port is accepted
// in the filter table's KUBE-NODEPORTS whether this node has endpoints or not, as
// kube-proxy writes it, so a host firewall's INPUT policy does not hide it from the load
// balancer.
func TestRulesAcceptHealthCheckNodePort(t *testing.T) {
	lb := proxy.ServicePort{Name: "default/lb:http", Protocol: corev1.ProtocolUDP, ClusterIP: "10.96.0.11", Port: 53, NodePort: 30081,
		LoadBalancerIPs: []string{"10.200.0.200"}, ExternalLocal: true, HealthCheckNodePort: 32000}
	rs := buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, []proxy.ServicePort{lb})
	want := "-A KUBE-NODEPORTS " + comment("default/lb:http health check node port") + " -m tcp -p tcp --dport 32000 -j ACCEPT\n"
	if got := string(rs.filter.chains[kubeNodePorts].text); got != want {
		t.Errorf("filter KUBE-NODEPORTS:\n%s\nwant\n%s", got, want)
	}
}

// Cluster IP traffic from outside the pods is masqueraded in the chain the cluster IP jumps
// to, as kube-proxy's internalTrafficChain: KUBE-SVL under internalTrafficPolicy Local
// (first, before the endpoints), and not in KUBE-SVC, which then serves only external
// traffic (already masqueraded by KUBE-EXT).
func TestRulesMasqueradeInTheClusterIPsChain(t *testing.T) {
	local := proxy.Endpoint{IP: "10.244.1.5", Port: 8080, Ready: true, Serving: true, Local: true}
	remote := proxy.Endpoint{IP: "10.244.2.5", Port: 8080, Ready: true, Serving: true}
	sp := proxy.ServicePort{Name: "default/itp", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.10", Port: 80, NodePort: 30080,
		InternalLocal: true, Endpoints: []proxy.Endpoint{local, remote}}
	rs := buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, []proxy.ServicePort{sp})
	masq := "-m tcp -p tcp -d 10.96.0.10/32 --dport 80 ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ"
	svl := string(rs.nat.chains[svlChain(&sp)].text)
	if want := "-A " + svlChain(&sp) + " " + comment("default/itp cluster IP") + " " + masq + "\n"; !strings.HasPrefix(svl, want) {
		t.Errorf("%s does not start with\n  %s\n%s", svlChain(&sp), want, svl)
	}
	if svc := string(rs.nat.chains[svcChain(&sp)].text); strings.Contains(svc, "KUBE-MARK-MASQ") {
		t.Errorf("%s masquerades, kube-proxy's does not:\n%s", svcChain(&sp), svc)
	}
}

// The service ports whose Local traffic policy finds no endpoint on this node while the
// Service has some elsewhere, by policy, as kube-proxy counts them for
// kubeproxy_sync_proxy_rules_no_local_endpoints_total: after a layout and after updates.
func TestBuilderCountsNoLocalEndpoints(t *testing.T) {
	remote := proxy.Endpoint{IP: "10.244.2.5", Port: 8080, Ready: true, Serving: true}
	local := proxy.Endpoint{IP: "10.244.1.5", Port: 8080, Ready: true, Serving: true, Local: true}
	itp := proxy.ServicePort{Name: "default/itp", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.10", Port: 80, InternalLocal: true,
		Endpoints: []proxy.Endpoint{remote}}
	etp := proxy.ServicePort{Name: "default/etp", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.11", Port: 80, NodePort: 30080, ExternalLocal: true,
		Endpoints: []proxy.Endpoint{remote}}
	none := proxy.ServicePort{Name: "default/none", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.12", Port: 80, NodePort: 30081,
		InternalLocal: true, ExternalLocal: true} // no endpoints anywhere: REJECT, not counted
	b := &builder{cfg: Config{ClusterCIDR: "10.244.0.0/16"}}
	b.build([]proxy.ServicePort{etp, itp, none})
	if b.noLocal != [2]int{1, 1} {
		t.Errorf("counted (internal, external) %v, want [1 1]", b.noLocal)
	}
	etpHere := etp
	etpHere.Endpoints = []proxy.Endpoint{local, remote}
	b.update([]proxy.Change{{Before: []proxy.ServicePort{etp}, After: []proxy.ServicePort{etpHere}}, {Before: []proxy.ServicePort{itp}}})
	if b.noLocal != [2]int{0, 0} {
		t.Errorf("after a local endpoint came and a Service went: %v, want [0 0]", b.noLocal)
	}
}
