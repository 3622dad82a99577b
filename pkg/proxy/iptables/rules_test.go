package iptables

import (
	"fmt"
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
	terminating := proxy.ServicePort{Name: "default/drain", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.14", Port: 80,
		Endpoints: []proxy.Endpoint{{IP: "10.244.3.5", Port: 8080, Serving: true, Terminating: true}}}
	out := render(buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, []proxy.ServicePort{np, lb, farOnly, none, terminating}))
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
	out := render(buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, []proxy.ServicePort{lb, open}))
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
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rules lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, fwChain(&open)) {
		t.Errorf("a service without source ranges got a firewall chain")
	}
	// The node port is not filtered: kube-proxy applies the ranges to the load balancer IPs.
	if !strings.Contains(out, "-A KUBE-NODEPORTS "+comment("default/lb:http")+" -m tcp -p tcp --dport 30090 -j "+ext) {
		t.Errorf("node port does not go to %s:\n%s", ext, out)
	}
}

// A builder reusing its last layout gives the same tables as one laying out from scratch,
// and lays out only the ports that changed.
func TestBuilderReusesUnchangedPorts(t *testing.T) {
	port := func(i int, ip string) proxy.ServicePort {
		return proxy.ServicePort{Name: fmt.Sprintf("default/s%d:http", i), Protocol: corev1.ProtocolTCP, ClusterIP: fmt.Sprintf("10.96.0.%d", i+1), Port: 80,
			NodePort: int32(30000 + i), Endpoints: []proxy.Endpoint{{IP: ip, Port: 8080, Ready: true, Serving: true}}}
	}
	ports := []proxy.ServicePort{port(0, "10.244.1.1"), port(1, "10.244.1.2"), port(2, "10.244.1.3")}
	b := &builder{cfg: Config{ClusterCIDR: "10.244.0.0/16"}}
	b.build(ports)
	ports[1] = port(1, "10.244.9.9")
	ports = ports[:2] // s2 deleted
	got := b.build(ports)
	want := buildRules(b.cfg, ports)
	for _, tb := range [][2]*table{{got.filter, want.filter}, {got.nat, want.nat}} {
		g, w := tb[0], tb[1]
		if strings.Join(g.order, ",") != strings.Join(w.order, ",") {
			t.Fatalf("%s chains %v, want %v", g.name, g.order, w.order)
		}
		for _, c := range w.order {
			if g.sum(c) != w.sum(c) || g.chains[c].rules != w.chains[c].rules {
				t.Errorf("%s chain %s differs from a fresh layout", g.name, c)
			}
		}
	}
	if sep := sepChain(&ports[0], ports[0].Endpoints[0]); !got.nat.chains[sep].reused {
		t.Errorf("unchanged port's chain %s was laid out again", sep)
	}
	if sep := sepChain(&ports[1], ports[1].Endpoints[0]); got.nat.chains[sep].reused || len(got.nat.chains[sep].text) == 0 {
		t.Errorf("changed port's chain %s was not laid out again", sep)
	}
}
