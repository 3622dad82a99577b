package ipvs

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/vmtest"
	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/minik8s/minik8s/pkg/proxy/ipset"
	libipvs "github.com/moby/ipvs"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// vmModules are what IPVS mode needs of the kernel: IPVS and its schedulers, the dummy
// and veth links, conntrack (with its netlink interface, for the UDP cleanup) and NAT, iptables on nf_tables with the matches and targets
// our rules use, and the ip set types.
var vmModules = []string{
	"crc32c_generic", // libcrc32c's soft dependency (an alias the .modinfo names)
	"ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_lc", "ip_vs_sh", "dummy", "veth",
	"nf_conntrack", "nf_conntrack_netlink", "nf_nat", "nf_tables", "nft_compat", "nft_chain_nat",
	"xt_comment", "xt_set", "xt_addrtype", "xt_mark", "xt_conntrack", "xt_MASQUERADE", "ipt_REJECT", "xt_ipvs",
	"xt_statistic", "xt_nat", "xt_recent", "xt_tcpudp", // the iptables mode, the benchmark's baseline
	"ip_set_hash_ip", "ip_set_hash_ipport", "ip_set_hash_ipportip", "ip_set_hash_ipportnet", "ip_set_bitmap_port",
}

// vmOptions put the test binary, the modules, iptables (nf_tables flavour, with its
// extensions) and ipset into the VM.
func vmOptions(t *testing.T, memoryMB int, timeout time.Duration, env ...string) vmtest.Options {
	files := map[string]string{"/etc/protocols": "/etc/protocols"}
	exts, _ := filepath.Glob("/usr/lib/x86_64-linux-gnu/xtables/*.so")
	if len(exts) == 0 {
		t.Fatal("no iptables extensions in /usr/lib/x86_64-linux-gnu/xtables (Debian package iptables)")
	}
	for _, e := range exts {
		files[e] = e
	}
	return vmtest.Options{Modules: vmModules, Binaries: []string{"iptables", "iptables-save", "iptables-restore", "ipset"},
		Files: files, MemoryMB: memoryMB, Timeout: timeout, Env: env}
}

// TestIPVSInVM proves IPVS mode against a real kernel: Debian's, booted in qemu (this host's
// kernel has no IPVS). Services and EndpointSlices are real API objects in client-go
// indexers, read through the same listers the informers fill in miniproxy; the proxier
// programs IPVS, kube-ipvs0, the ip sets and the rules, and TCP connections through the
// ClusterIP and a NodePort reach backends listening in network namespaces inside the VM.
func TestIPVSInVM(t *testing.T) {
	if !vmtest.InVM() {
		vmtest.RunTest(t, vmOptions(t, 1024, 4*time.Minute))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b1 := startBackend(t, "b1", 1)
	b2 := startBackend(t, "b2", 2)

	svcs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	slices := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	must(t, svcs.Add(service("web", "10.96.0.10", corev1.ProtocolTCP, 80, 30080, 0)))
	must(t, slices.Add(slice("web", corev1.ProtocolTCP, 8080, b1, b2)))
	must(t, svcs.Add(service("dns", "10.96.0.53", corev1.ProtocolUDP, 53, 0, 600)))
	must(t, slices.Add(slice("dns", corev1.ProtocolUDP, 5353, b1)))
	newProxier := func(cfg Config) *Proxier {
		cfg.ClusterCIDR = "10.244.0.0/16"
		p, err := New(cfg, corelisters.NewServiceLister(svcs),
			discoverylisters.NewEndpointSliceLister(slices), "vm", log)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := newProxier(Config{})
	sync := func(p *Proxier, full bool) {
		t.Helper()
		res, err := p.Sync(ctx)
		if err != nil {
			t.Fatalf("sync: %v", err)
		}
		if res.Full != full {
			t.Fatalf("sync full=%v, want %v", res.Full, full)
		}
		t.Logf("sync: %+v", res)
	}
	sync(p, true)
	list, err := List()
	must(t, err)
	t.Logf("IPVS after the first sync (ipvsadm -Ln):\n%s", list)
	t.Logf("ip sets:\n%s", run(t, "ipset", "list", "-t"))
	t.Logf("iptables-save -t nat:\n%s", run(t, "iptables-save", "-t", "nat"))

	h, err := libipvs.New("")
	must(t, err)
	defer h.Close()
	web := []string{b1 + ":8080", b2 + ":8080"}
	checkIPVS(t, h, map[string]string{
		"TCP 10.96.0.10:80 rr":             strings.Join(web, " "),
		"TCP 10.0.1.1:30080 rr":            strings.Join(web, " "),
		"TCP 10.0.2.1:30080 rr":            strings.Join(web, " "),
		"UDP 10.96.0.53:53 rr persist 600": b1 + ":5353",
	})
	checkBound(t, "10.96.0.10", "10.96.0.53")
	checkSet(t, ipset.ClusterIP, "10.96.0.10,tcp:80", "10.96.0.53,udp:53")
	checkSet(t, ipset.NodePortTCP, "30080")
	checkSet(t, ipset.LoopBack, b1+",tcp:8080,"+b1, b2+",tcp:8080,"+b2, b1+",udp:5353,"+b1)
	checkSet(t, ipset.IPVSIPs, "10.96.0.10", "10.96.0.53")
	nat := run(t, "iptables-save", "-t", "nat")
	for _, rule := range []string{
		`-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`,
		`-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING`,
		`-m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ`,
		`-m set --match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ`,
		`-m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE`,
		`-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000`,
	} {
		if !strings.Contains(nat, rule) {
			t.Errorf("nat table lacks %q", rule)
		}
	}
	if v, _ := os.ReadFile("/proc/sys/net/ipv4/vs/conntrack"); strings.TrimSpace(string(v)) != "1" {
		t.Errorf("net/ipv4/vs/conntrack = %q, want 1", v)
	}

	// Traffic: rr over both backends through the ClusterIP, and the NodePort answers too.
	if got := answers(t, "10.96.0.10:80", 6); !got["b1"] || !got["b2"] {
		t.Errorf("ClusterIP answered by %v, want b1 and b2", got)
	}
	if got := answers(t, "10.0.2.1:30080", 2); len(got) == 0 {
		t.Error("NodePort 10.0.2.1:30080 did not answer")
	}

	// UDP: a client keeps one flow (same source port) to the UDP Service while its only
	// endpoint is replaced; after the sync no conntrack entry sends the flow to the old
	// endpoint (this kernel's IPVS drops those of a deleted real server itself, as
	// expire_nodest_conn=1 asks since Linux 5.9), and the same flow reaches the new one.
	client, err := net.DialUDP("udp", &net.UDPAddr{Port: 40053}, &net.UDPAddr{IP: net.ParseIP("10.96.0.53"), Port: 53})
	must(t, err)
	defer client.Close()
	if got := udpAnswer(client, 5); got != "b1" {
		t.Fatalf("UDP 10.96.0.53:53 answered %q, want b1", got)
	}
	if n := flowsTo(t, "10.96.0.53", b1); n == 0 {
		t.Fatalf("no conntrack entry of the UDP flow to %s", b1)
	}
	update(t, p, slices, slice("dns", corev1.ProtocolUDP, 5353, b2))
	sync(p, false)
	if n := flowsTo(t, "10.96.0.53", b1); n != 0 {
		t.Errorf("%d conntrack entries still send 10.96.0.53:53 to the removed endpoint %s", n, b1)
	}
	if got := udpAnswer(client, 5); got != "b2" {
		t.Errorf("after replacing its only endpoint the UDP flow got %q, want b2", got)
	}
	// What older kernels leave, and what a flow sent before the Service had endpoints
	// leaves (not NATed): entries the proxier must delete itself; the flow to the serving
	// endpoint stays.
	addFlow(t, "10.0.2.1", 41000, "10.96.0.53", 53, b1)           // to the removed endpoint
	addFlow(t, "10.0.2.1", 41001, "10.96.0.53", 53, "10.96.0.53") // never NATed
	addFlow(t, "10.0.2.1", 41002, "10.96.0.53", 53, b2)           // to the serving one
	res, err := p.Sync(ctx)
	must(t, err)
	if res.ConntrackDeleted != 2 || flowsTo(t, "10.96.0.53", b1)+flowsTo(t, "10.96.0.53", "10.96.0.53") != 0 {
		t.Errorf("conntrack cleanup deleted %d entries; want the 2 stale ones gone", res.ConntrackDeleted)
	}
	if flowsTo(t, "10.96.0.53", b2) < 2 {
		t.Errorf("conntrack cleanup deleted flows to the serving endpoint %s", b2)
	}

	// Another scheduler: a new proxier (a restart with --ipvs-scheduler sh) reads the kernel
	// and updates the virtual servers in place; the timeouts and strict ARP are set.
	p.Close()
	p = newProxier(Config{Scheduler: "sh", TCPTimeout: 1200 * time.Second, StrictARP: true})
	defer func() { p.Close() }()
	sync(p, true)
	if c, err := h.GetConfig(); err != nil || c.TimeoutTCP != 1200*time.Second {
		t.Errorf("IPVS timeouts %+v (%v), want TCP 20m0s (the kernel default is 15m)", c, err)
	}
	for k, v := range map[string]string{"arp_ignore": "1", "arp_announce": "2"} {
		if got, _ := os.ReadFile("/proc/sys/net/ipv4/conf/all/" + k); strings.TrimSpace(string(got)) != v {
			t.Errorf("--ipvs-strict-arp: %s = %q, want %s", k, got, v)
		}
	}
	checkIPVS(t, h, map[string]string{
		"TCP 10.96.0.10:80 sh":             strings.Join(web, " "),
		"TCP 10.0.1.1:30080 sh":            strings.Join(web, " "),
		"TCP 10.0.2.1:30080 sh":            strings.Join(web, " "),
		"UDP 10.96.0.53:53 sh persist 600": b2 + ":5353",
	})

	// One endpoint goes away: a partial sync removes its real servers and hairpin entry.
	update(t, p, slices, slice("web", corev1.ProtocolTCP, 8080, b1))
	sync(p, false)
	checkIPVS(t, h, map[string]string{
		"TCP 10.96.0.10:80 sh":             b1 + ":8080",
		"TCP 10.0.1.1:30080 sh":            b1 + ":8080",
		"TCP 10.0.2.1:30080 sh":            b1 + ":8080",
		"UDP 10.96.0.53:53 sh persist 600": b2 + ":5353",
	})
	checkSet(t, ipset.LoopBack, b1+",tcp:8080,"+b1, b2+",udp:5353,"+b2)
	// Graceful termination: the ClusterIP's earlier connections to b2 (closed seconds ago,
	// still counted by IPVS for its TIME_WAIT of 2 minutes) keep b2 there at weight 0.
	cluster := &libipvs.Service{Address: net.ParseIP("10.96.0.10").To4(), Protocol: 6, Port: 80, AddressFamily: 2}
	dests, err := h.GetDestinations(cluster)
	must(t, err)
	draining := false
	for _, d := range dests {
		if d.Address.String() == b2 {
			draining = d.Weight == 0 && d.ActiveConnections+d.InactiveConnections > 0
		}
	}
	if !draining {
		t.Errorf("10.96.0.10:80 after removing b2: want b2 draining at weight 0 with its connections, have %d real servers", len(dests))
	}
	if got := answers(t, "10.96.0.10:80", 4); !got["b1"] || got["b2"] {
		t.Errorf("after removing b2 the ClusterIP answered by %v, want b1 only", got)
	}

	// Someone deletes kube-ipvs0: the next sync, even a partial one, makes it again with its
	// addresses.
	l, err := netlink.LinkByName(DummyDevice)
	must(t, err)
	must(t, netlink.LinkDel(l))
	sync(p, false)
	checkBound(t, "10.96.0.10", "10.96.0.53")
	if got := answers(t, "10.96.0.10:80", 1); !got["b1"] {
		t.Errorf("after kube-ipvs0 came back the ClusterIP answered %v, want b1", got)
	}
	// The same while miniproxy is down: the restarted one adopts the virtual servers.
	l, err = netlink.LinkByName(DummyDevice)
	must(t, err)
	must(t, netlink.LinkDel(l))
	p.Close()
	p = newProxier(Config{Scheduler: "sh", TCPTimeout: 1200 * time.Second, StrictARP: true})
	sync(p, true)
	checkBound(t, "10.96.0.10", "10.96.0.53")

	// Someone deletes a virtual server behind our back: the next full sync puts it back.
	must(t, h.DelService(&libipvs.Service{Address: net.ParseIP("10.96.0.53").To4(), Protocol: 17, Port: 53, AddressFamily: 2}))
	p.ForceFull()
	sync(p, true)
	checkIPVS(t, h, map[string]string{
		"TCP 10.96.0.10:80 sh":             b1 + ":8080",
		"TCP 10.0.1.1:30080 sh":            b1 + ":8080",
		"TCP 10.0.2.1:30080 sh":            b1 + ":8080",
		"UDP 10.96.0.53:53 sh persist 600": b2 + ":5353",
	})

	// The Service goes: its virtual servers, address and set entries with it.
	for _, o := range []struct {
		store cache.Indexer
		obj   any
	}{{svcs, service("web", "", "", 0, 0, 0)}, {slices, slice("web", corev1.ProtocolTCP, 0)}} {
		must(t, o.store.Delete(o.obj))
		p.Changed(o.obj)
	}
	sync(p, false)
	checkIPVS(t, h, map[string]string{"UDP 10.96.0.53:53 sh persist 600": b2 + ":5353"})
	checkBound(t, "10.96.0.53")
	checkSet(t, ipset.ClusterIP, "10.96.0.53,udp:53")
	checkSet(t, ipset.NodePortTCP)

	// loadBalancerSourceRanges as the node sees them: its connections to a load balancer IP
	// (on kube-ipvs0, so they leave from it) are dropped in KUBE-IPVS-OUT-FILTER, unless a
	// range holds the node's address, whose KUBE-LOAD-BALANCER-SOURCE-IP entry lets them
	// in (kube-proxy's allowFromNode).
	lb := service("lb", "10.96.0.20", corev1.ProtocolTCP, 80, 0, 0)
	lb.Spec.Type = corev1.ServiceTypeLoadBalancer
	lb.Spec.LoadBalancerSourceRanges = []string{"10.0.2.0/24"}
	lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.200.0.200"}}
	for _, o := range []struct {
		store cache.Indexer
		obj   any
	}{{svcs, lb}, {slices, slice("lb", corev1.ProtocolTCP, 8080, b1)}} {
		must(t, o.store.Add(o.obj))
		p.Changed(o.obj)
	}
	sync(p, false)
	if c, err := net.DialTimeout("tcp", "10.200.0.200:80", 2*time.Second); err == nil {
		c.Close()
		t.Error("the node reached a load balancer IP whose source ranges do not hold it")
	}
	p.SetNode(proxy.NodeFacts{IP: "10.0.2.1"})
	sync(p, true)
	checkSet(t, ipset.LoadBalancerSourceIP, "10.200.0.200,tcp:80,10.200.0.200")
	if got := answers(t, "10.200.0.200:80", 1); !got["b1"] {
		t.Errorf("the node in the source ranges reached %v through the load balancer IP, want b1", got)
	}

	// --cleanup: nothing of ours is left.
	must(t, Cleanup(ctx))
	if svcs, err := h.GetServices(); err != nil || len(svcs) != 0 {
		t.Errorf("after cleanup IPVS holds %d virtual servers (%v)", len(svcs), err)
	}
	if _, err := netlink.LinkByName(DummyDevice); err == nil {
		t.Errorf("%s still there after cleanup", DummyDevice)
	}
	if out := run(t, "iptables-save"); strings.Contains(out, "KUBE-") {
		t.Errorf("KUBE- chains or rules left after cleanup:\n%s", out)
	}
	if out := run(t, "ipset", "list", "-n"); strings.Contains(out, "KUBE-") {
		t.Errorf("sets left after cleanup: %s", out)
	}
}

// udpAnswer sends on the client's flow until an answer comes, at most tries times.
func udpAnswer(c *net.UDPConn, tries int) string {
	buf := make([]byte, 64)
	for range tries {
		if _, err := c.Write([]byte("who")); err != nil {
			continue
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if n, err := c.Read(buf); err == nil {
			return string(buf[:n])
		}
	}
	return ""
}

// flowsTo counts the UDP conntrack entries to vip whose reply comes from endpoint.
func flowsTo(t *testing.T, vip, endpoint string) int {
	t.Helper()
	flows, err := netlink.ConntrackTableList(netlink.ConntrackTable, netlink.FAMILY_V4)
	must(t, err)
	n := 0
	for _, f := range flows {
		if f.Forward.Protocol == 17 && f.Forward.DstIP.String() == vip && f.Reverse.SrcIP.String() == endpoint {
			n++
		}
	}
	return n
}

// addFlow makes a UDP conntrack entry from src:sport to vip:port answered by endpoint
// (netlink wants 4-byte IPv4 addresses: 16-byte ones are sent as 0.0.0.0).
func addFlow(t *testing.T, src string, sport uint16, vip string, port uint16, endpoint string) {
	t.Helper()
	dport := port
	if endpoint != vip {
		dport = 5353
	}
	f := &netlink.ConntrackFlow{FamilyType: netlink.FAMILY_V4, TimeOut: 120,
		Forward: netlink.IPTuple{SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(vip).To4(), Protocol: 17, SrcPort: sport, DstPort: port},
		Reverse: netlink.IPTuple{SrcIP: net.ParseIP(endpoint).To4(), DstIP: net.ParseIP(src).To4(), Protocol: 17, SrcPort: dport, DstPort: sport}}
	must(t, netlink.ConntrackCreate(netlink.ConntrackTable, netlink.FAMILY_V4, f))
}

// update replaces an object in the indexer and tells the proxier, as miniproxy's informer
// handlers do (old and new object).
func update(t *testing.T, p *Proxier, store cache.Indexer, obj any) {
	if old, ok, _ := store.Get(obj); ok {
		p.Changed(old)
	}
	must(t, store.Update(obj))
	p.Changed(obj)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func service(name, clusterIP string, proto corev1.Protocol, port, nodePort, affinity int32) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: clusterIP, ClusterIPs: []string{clusterIP},
			Ports: []corev1.ServicePort{{Name: "p", Protocol: proto, Port: port, TargetPort: intstr.FromInt32(port)}}}}
	if nodePort != 0 {
		svc.Spec.Type = corev1.ServiceTypeNodePort
		svc.Spec.Ports[0].NodePort = nodePort
	}
	if affinity != 0 {
		svc.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		svc.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(affinity)}}
	}
	return svc
}

func slice(svc string, proto corev1.Protocol, port int32, ips ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: svc + "-abcde",
		Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("p"), Protocol: ptr.To(proto), Port: ptr.To(port)}}}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To("vm"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

// backendNS are the network namespaces startBackend made, by their address.
var backendNS = map[string]netns.NsHandle{}

// startBackend makes a network namespace joined to the VM's by a veth pair (10.0.i.1 on the
// VM's side, 10.0.i.2 inside) with a TCP server on :8080 and a UDP one on :5353 answering
// its name.
func startBackend(t *testing.T, name string, i int) string {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	must(t, err)
	defer orig.Close()
	ns, err := netns.New() // this thread is now inside
	must(t, err)
	backendNS[fmt.Sprintf("10.0.%d.2", i)] = ns
	must(t, netns.Set(orig))
	hostIP, nsIP := fmt.Sprintf("10.0.%d.1", i), fmt.Sprintf("10.0.%d.2", i)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth-" + name}, PeerName: "eth-" + name}
	must(t, netlink.LinkAdd(veth))
	peer, err := netlink.LinkByName("eth-" + name)
	must(t, err)
	must(t, netlink.LinkSetNsFd(peer, int(ns)))
	must(t, netlink.AddrAdd(veth, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(hostIP), Mask: net.CIDRMask(24, 32)}}))
	must(t, netlink.LinkSetUp(veth))

	must(t, netns.Set(ns))
	defer func() { must(t, netns.Set(orig)) }()
	lo, err := netlink.LinkByName("lo")
	must(t, err)
	must(t, netlink.LinkSetUp(lo))
	inner, err := netlink.LinkByName("eth-" + name)
	must(t, err)
	must(t, netlink.AddrAdd(inner, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(nsIP), Mask: net.CIDRMask(24, 32)}}))
	must(t, netlink.LinkSetUp(inner))
	must(t, netlink.RouteAdd(&netlink.Route{Gw: net.ParseIP(hostIP)}))
	l, err := net.Listen("tcp", nsIP+":8080") // the socket stays in this namespace
	must(t, err)
	u, err := net.ListenPacket("udp", nsIP+":5353")
	must(t, err)
	go func() {
		buf := make([]byte, 512)
		for {
			_, from, err := u.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = u.WriteTo([]byte(name), from)
		}
	}()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, name)
			c.Close()
		}
	}()
	return nsIP
}

// answers connects n times (new connections) and collects who answered.
func answers(t *testing.T, addr string, n int) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for range n {
		c, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			t.Errorf("connect %s: %v", addr, err)
			continue
		}
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil && err != io.EOF {
			t.Errorf("read from %s: %v", addr, err)
			continue
		}
		got[strings.TrimSpace(line)] = true
	}
	return got
}

// checkIPVS compares the kernel's virtual servers with want ("PROTO ip:port sched [persist
// T]" -> real servers, space separated, sorted), leaving out real servers draining at
// weight 0.
func checkIPVS(t *testing.T, h *libipvs.Handle, want map[string]string) {
	t.Helper()
	svcs, err := h.GetServices()
	must(t, err)
	got := map[string]string{}
	for _, s := range svcs {
		key := fmt.Sprintf("%s %s %s", protoName(s.Protocol), net.JoinHostPort(s.Address.String(), fmt.Sprint(s.Port)), s.SchedName)
		if s.Flags&flagPersistent != 0 {
			key += fmt.Sprintf(" persist %d", s.Timeout)
		}
		dests, err := h.GetDestinations(s)
		must(t, err)
		var ds []string
		for _, d := range dests {
			hp := net.JoinHostPort(d.Address.String(), fmt.Sprint(d.Port))
			if d.Weight == 0 {
				// Graceful termination: a removed real server stays at weight 0 only while
				// it holds connections, and is then left out of the comparison.
				if conns := d.ActiveConnections + d.InactiveConnections; conns == 0 {
					t.Errorf("%s: real server %s at weight 0 without connections (should be deleted)", key, hp)
				} else {
					t.Logf("%s: real server %s draining, %d connections", key, hp, conns)
				}
				continue
			}
			ds = append(ds, hp)
		}
		sort.Strings(ds)
		got[key] = strings.Join(ds, " ")
	}
	for k, v := range want {
		ds := strings.Fields(v)
		sort.Strings(ds)
		want[k] = strings.Join(ds, " ")
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("IPVS holds\n  %v\nwant\n  %v", got, want)
	}
}

func checkBound(t *testing.T, ips ...string) {
	t.Helper()
	l, err := netlink.LinkByName(DummyDevice)
	must(t, err)
	got, err := boundAddresses(l)
	must(t, err)
	if len(got) != len(ips) {
		t.Errorf("%s holds %v, want %v", DummyDevice, got, ips)
	}
	for _, ip := range ips {
		if !got[ip] {
			t.Errorf("%s holds %v, want %v", DummyDevice, got, ips)
		}
	}
}

func checkSet(t *testing.T, name string, entries ...string) {
	t.Helper()
	sets, err := ipset.Save(context.Background())
	must(t, err)
	got, ok := sets[name]
	if !ok {
		t.Fatalf("no set %s", name)
	}
	if len(got) != len(entries) {
		t.Errorf("%s holds %v, want %v", name, got, entries)
		return
	}
	for _, e := range entries {
		if !got[e] {
			t.Errorf("%s holds %v, want %v", name, got, entries)
		}
	}
}
