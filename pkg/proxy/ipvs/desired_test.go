package ipvs

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/cputime"
	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/minik8s/minik8s/pkg/proxy/ipset"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

func ports() []proxy.ServicePort {
	return []proxy.ServicePort{
		{Name: "default/web:http", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.10", Port: 80, NodePort: 30080,
			ExternalIPs: []string{"192.0.2.7"}, LoadBalancerIPs: []string{"10.200.0.200"}, ExternalLocal: true, HealthCheckNodePort: 32000,
			Endpoints: []proxy.Endpoint{
				{IP: "10.244.1.2", Port: 8080, Ready: true, Serving: true, Local: true},
				{IP: "10.244.2.2", Port: 8080, Ready: true, Serving: true},
				{IP: "10.244.3.2", Port: 8080, Serving: true, Terminating: true},
			}},
		{Name: "kube-system/dns:dns", Protocol: corev1.ProtocolUDP, ClusterIP: "10.96.0.53", Port: 53, AffinitySeconds: 600,
			Endpoints: []proxy.Endpoint{{IP: "10.244.2.3", Port: 53, Serving: true, Terminating: true}}},
	}
}

func TestDesiredVirtualServers(t *testing.T) {
	st := desiredState(Config{Scheduler: "lc"}, ports(), []net.IP{net.ParseIP("10.200.0.11")})
	want := map[vsKey]string{
		{unix.IPPROTO_TCP, "10.96.0.10", 80}:     "10.244.1.2:8080,10.244.2.2:8080", // ready ones, whole cluster
		{unix.IPPROTO_TCP, "192.0.2.7", 80}:      "10.244.1.2:8080",                 // externalTrafficPolicy Local
		{unix.IPPROTO_TCP, "10.200.0.200", 80}:   "10.244.1.2:8080",
		{unix.IPPROTO_TCP, "10.200.0.11", 30080}: "10.244.1.2:8080",
		{unix.IPPROTO_UDP, "10.96.0.53", 53}:     "10.244.2.3:53", // only terminating: the fallback
	}
	if len(st.services) != len(want) {
		t.Fatalf("%d virtual servers, want %d: %v", len(st.services), len(want), sortedKeys(st.services))
	}
	for k, dests := range want {
		vs := st.services[k]
		if vs == nil {
			t.Fatalf("no virtual server %s", k)
		}
		var got []string
		for d, w := range vs.Dests {
			if w != 1 {
				t.Errorf("%s -> %s weight %d", k, d, w)
			}
			got = append(got, d)
		}
		if len(got) != len(strings.Split(dests, ",")) {
			t.Errorf("%s real servers %v, want %s", k, got, dests)
		}
		for _, d := range strings.Split(dests, ",") {
			if _, ok := vs.Dests[d]; !ok {
				t.Errorf("%s real servers %v, want %s", k, got, dests)
			}
		}
		if vs.Scheduler != "lc" {
			t.Errorf("%s scheduler %q", k, vs.Scheduler)
		}
	}
	if p := st.services[vsKey{unix.IPPROTO_UDP, "10.96.0.53", 53}].Persistent; p != 600 {
		t.Errorf("ClientIP affinity: persistence %d, want 600", p)
	}
	if p := st.services[vsKey{unix.IPPROTO_TCP, "10.96.0.10", 80}].Persistent; p != 0 {
		t.Errorf("no affinity, yet persistence %d", p)
	}
	for _, ip := range []string{"10.96.0.10", "10.96.0.53", "192.0.2.7", "10.200.0.200"} {
		if !st.addrs[ip] {
			t.Errorf("%s not bound to kube-ipvs0", ip)
		}
	}
	if st.addrs["10.200.0.11"] {
		t.Error("the node's own address bound to kube-ipvs0")
	}
}

func TestDesiredSets(t *testing.T) {
	st := desiredState(Config{}, ports(), []net.IP{net.ParseIP("10.200.0.11")})
	want := map[string][]string{
		ipset.ClusterIP:           {"10.96.0.10,tcp:80", "10.96.0.53,udp:53"},
		ipset.ExternalIPLocal:     {"192.0.2.7,tcp:80"},
		ipset.ExternalIP:          nil,
		ipset.LoadBalancer:        {"10.200.0.200,tcp:80"},
		ipset.LoadBalancerLocal:   {"10.200.0.200,tcp:80"},
		ipset.NodePortTCP:         {"30080"},
		ipset.NodePortLocalTCP:    {"30080"},
		ipset.NodePortUDP:         nil,
		ipset.HealthCheckNodePort: {"32000"},
		ipset.LoopBack:            {"10.244.1.2,tcp:8080,10.244.1.2"},
		ipset.IPVSIPs:             {"10.96.0.10", "10.96.0.53", "192.0.2.7", "10.200.0.200"},
	}
	for name, entries := range want {
		got := st.sets[name].Entries
		if len(got) != len(entries) {
			t.Errorf("%s: %v, want %v", name, got, entries)
		}
		for _, e := range entries {
			if !got[e] {
				t.Errorf("%s: %v, want %v", name, got, entries)
			}
		}
	}
	if st.services[vsKey{unix.IPPROTO_TCP, "10.96.0.10", 80}].Scheduler != "rr" {
		t.Error("the default scheduler is not rr")
	}
}

func TestRulesAreKubeProxysAndConstant(t *testing.T) {
	st := desiredState(Config{ClusterCIDR: "10.244.0.0/16"}, ports(), []net.IP{net.ParseIP("10.200.0.11")})
	text := buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, st.sets).restore()
	for _, line := range []string{
		`-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ`,
		`-A KUBE-SERVICES -m comment --comment "Kubernetes service lb portal" -m set --match-set KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER`,
		`-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port with externalTrafficPolicy=local" -m set --match-set KUBE-NODE-PORT-LOCAL-TCP dst -j RETURN`,
		`-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port for masquerade purpose" -m set --match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ`,
		`-A KUBE-POSTROUTING -m comment --comment "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE`,
		`-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT`,
		`-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT`,
		`-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000`,
		`-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT`,
		`-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("rules lack\n%s\nin\n%s", line, text)
		}
	}
	if strings.Contains(text, "KUBE-NODE-PORT-UDP") {
		t.Error("a rule for the empty KUBE-NODE-PORT-UDP set")
	}
	// The rule count does not grow with the Services: 10 000 more give the same rules.
	var many []proxy.ServicePort
	for i := range 10000 {
		sp := ports()[0]
		sp.Name = "default/web" + string(rune('a'+i%26))
		sp.ClusterIP = net.IPv4(10, 96, byte(i/256), byte(i%256)).String()
		many = append(many, sp)
	}
	st2 := desiredState(Config{ClusterCIDR: "10.244.0.0/16"}, append(ports(), many...), []net.IP{net.ParseIP("10.200.0.11")})
	if text2 := buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, st2.sets).restore(); text2 != text {
		t.Errorf("rules changed with the number of Services:\n%s", text2)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{Scheduler: "fastest"}).Validate(); err == nil || !strings.Contains(err.Error(), "--ipvs-scheduler") {
		t.Errorf("bad scheduler: %v", err)
	}
	if err := (Config{Scheduler: "sh", ClusterCIDR: "10.244.0.0/16"}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestMissingJumpsGoFirstInTheirTable(t *testing.T) {
	st := desiredState(Config{}, ports(), nil)
	text := withJumps(buildRules(Config{}, st.sets).restore(), []jump{jumps[0], jumps[3]})
	nat := text[strings.Index(text, "*nat"):]
	filter := text[:strings.Index(text, "*nat")]
	if !strings.Contains(nat, `-I OUTPUT 1 -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`+"\nCOMMIT") {
		t.Errorf("nat jump missing or misplaced:\n%s", nat)
	}
	if !strings.Contains(filter, `-I FORWARD 1 -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD`+"\nCOMMIT") {
		t.Errorf("filter jump missing or misplaced:\n%s", filter)
	}
}

// BenchmarkWantedState is the part of a sync that runs in the proxier, not the kernel:
// snapshot of the listers, wanted state, and the ip set lines to write, for N Services x 2
// endpoints with one endpoint moved per sync. "changes" is what Proxier does (told the
// changed Service, as the informers' events tell it, the Snapshotter reads only it and the
// tracker recomputes only its ports); the baselines: "compare" snapshots every Service and
// has the tracker compare every port with its last one (the partial syncs before change
// tracking), "full" recomputes every Service and diffs every set entry. The VM
// benchmark (TestIPVSBenchInVM) measures whole syncs, kernel included, in emulation; this
// gives the native figure of the same work on this host.
func BenchmarkWantedState(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, mode := range []string{"full", "compare", "changes"} {
			b.Run(fmt.Sprintf("%d/%s", n, mode), func(b *testing.B) {
				svcs, slices := benchObjects(n)
				services, sliceLister := corelisters.NewServiceLister(svcs), discoverylisters.NewEndpointSliceLister(slices)
				snap := &proxy.Snapshotter{Services: services, Slices: sliceLister, NodeName: "vm"}
				ports, err := snap.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				track := newTracker(Config{}, nil)
				track.update(ports, nil)
				track.markApplied()
				have := map[string]map[string]bool{}
				for name, s := range track.st.sets {
					have[name] = s.Entries
				}
				g := 0
				cpu0 := cputime.Self()
				b.ResetTimer()
				for b.Loop() {
					g++
					i := (g * 7919) % n
					// A generation differing from the one Service i had at its last visit.
					moved := benchSlice(fmt.Sprintf("svc-%d", i), i, 1+(g/n)%5)
					if err := slices.Update(moved); err != nil {
						b.Fatal(err)
					}
					if mode == "full" {
						ports, err := proxy.Snapshot(services, sliceLister, "vm")
						if err != nil {
							b.Fatal(err)
						}
						st := desiredState(Config{}, ports, nil)
						_ = ipset.Script(st.orderedSets(), have)
						continue
					}
					var got int
					if mode == "changes" {
						snap.Mark(moved)
						changes, err := snap.Changes()
						if err != nil {
							b.Fatal(err)
						}
						got = track.change(changes, nil)
					} else {
						ports, err := snap.Snapshot()
						if err != nil {
							b.Fatal(err)
						}
						got = track.update(ports, nil)
					}
					if got != 1 {
						b.Fatalf("%d service ports recomputed, want 1", got)
					}
					_ = track.setChanges()
					track.markApplied()
				}
				// CPU time per sync: on a shared host the wall time mostly measures the queue.
				b.ReportMetric(float64(cputime.Self()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// An endpoint the topology hints leave to other nodes (Elsewhere) is no real server of the
// cluster IP; externalTrafficPolicy Local uses it when it is local, whatever the hints.
func TestDesiredVirtualServersFollowTopologyHints(t *testing.T) {
	sp := proxy.ServicePort{Name: "default/close", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.10", Port: 80,
		ExternalIPs: []string{"192.0.2.7"}, ExternalLocal: true,
		Endpoints: []proxy.Endpoint{
			{IP: "10.244.1.2", Port: 8080, Ready: true, Serving: true, Local: true, Elsewhere: true},
			{IP: "10.244.2.2", Port: 8080, Ready: true, Serving: true},
		}}
	st := desiredState(Config{}, []proxy.ServicePort{sp}, nil)
	for k, want := range map[vsKey]string{
		{unix.IPPROTO_TCP, "10.96.0.10", 80}: "10.244.2.2:8080",
		{unix.IPPROTO_TCP, "192.0.2.7", 80}:  "10.244.1.2:8080",
	} {
		vs := st.services[k]
		if vs == nil {
			t.Fatalf("no virtual server %s", k)
		}
		var got []string
		for d := range vs.Dests {
			got = append(got, d)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("%s real servers %v, want %s", k, got, want)
		}
	}
}

// A Local traffic policy with no endpoint on this node sends to the cluster's endpoints, as
// kube-proxy's IPVS mode (syncEndpoint, kubernetes#97081): this node's pods and the node
// itself still reach the Service; an external client's replies come from the pod and are
// lost, as there.
func TestDesiredLocalPolicyWithoutLocalEndpoints(t *testing.T) {
	remote := proxy.Endpoint{IP: "10.244.2.2", Port: 8080, Ready: true, Serving: true}
	sp := proxy.ServicePort{Name: "default/far", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.10", Port: 80, NodePort: 30080,
		ExternalLocal: true, InternalLocal: true, Endpoints: []proxy.Endpoint{remote}}
	st := desiredState(Config{}, []proxy.ServicePort{sp}, []net.IP{net.ParseIP("10.200.0.11")})
	for _, k := range []vsKey{{unix.IPPROTO_TCP, "10.96.0.10", 80}, {unix.IPPROTO_TCP, "10.200.0.11", 30080}} {
		vs := st.services[k]
		if vs == nil {
			t.Fatalf("no virtual server %s", k)
		}
		if _, ok := vs.Dests[remote.String()]; !ok || len(vs.Dests) != 1 {
			t.Errorf("%s real servers %v, want %s", k, vs.Dests, remote)
		}
	}
}

// loadBalancerSourceRanges fill kube-proxy's sets: the load balancer IP and port in
// KUBE-LOAD-BALANCER-FW (filter KUBE-PROXY-FIREWALL sends it to KUBE-SOURCE-RANGES-FIREWALL,
// which drops it), each allowed range beside it in KUBE-LOAD-BALANCER-SOURCE-CIDR (which
// returns first), a host range as ipset save prints it, without /32.
func TestDesiredSourceRangeSets(t *testing.T) {
	sp := ports()[0]
	sp.SourceRanges = []string{"192.168.0.0/16", "198.51.100.7/32"}
	st := desiredState(Config{}, []proxy.ServicePort{sp}, nil)
	for name, want := range map[string][]string{
		ipset.LoadBalancerFW:         {"10.200.0.200,tcp:80"},
		ipset.LoadBalancerSourceCIDR: {"10.200.0.200,tcp:80,192.168.0.0/16", "10.200.0.200,tcp:80,198.51.100.7"},
	} {
		if got := slices.Sorted(maps.Keys(st.sets[name].Entries)); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	// The node outside the ranges: its own connections to the address are dropped on
	// their way out, as kube-proxy's KUBE-IPVS-OUT-FILTER.
	drop := "-A KUBE-IPVS-OUT-FILTER -s 10.200.0.200 -m ipvs --vaddr 10.200.0.200 --vproto tcp --vport 80 -j DROP\n"
	if text := buildRules(Config{}, st.sets).restore(); !strings.Contains(text, drop) {
		t.Errorf("rules lack %q:\n%s", drop, text)
	}
	// The node in the ranges: let in from the address itself, and no drop.
	sp.AllowFromNode = true
	st = desiredState(Config{}, []proxy.ServicePort{sp}, nil)
	if got := slices.Sorted(maps.Keys(st.sets[ipset.LoadBalancerSourceIP].Entries)); !slices.Equal(got, []string{"10.200.0.200,tcp:80,10.200.0.200"}) {
		t.Errorf("%s: %v, want the load balancer IP as a source", ipset.LoadBalancerSourceIP, got)
	}
	if text := buildRules(Config{}, st.sets).restore(); strings.Contains(text, "KUBE-IPVS-OUT-FILTER -s") ||
		!strings.Contains(text, "--match-set "+ipset.LoadBalancerSourceIP+" dst,dst,src -j RETURN") {
		t.Errorf("node in the ranges: want the source IP set's RETURN and no drop:\n%s", text)
	}
}
