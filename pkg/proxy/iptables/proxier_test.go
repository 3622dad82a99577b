package iptables

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/nettest"
	"github.com/minik8s/minik8s/pkg/proxy"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// testNet is a node namespace (where the proxier runs and clients connect from) and two
// endpoint namespaces behind veth pairs, each serving its own name on TCP 8080. Nothing in
// it routes to the host; it is deleted when the test ends.
type testNet struct {
	node string // path of the node namespace
	eps  []string
}

func newTestNet(t *testing.T) *testNet {
	t.Helper()
	testenv.RequireRoot(t, "creates network namespaces and iptables rules in them")
	testenv.RequireTools(t, "ip", "iptables", "iptables-save", "iptables-restore")
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	node := "mkpx-" + id + "-node"
	tn := &testNet{node: nettest.Named(t, node)}
	for i := 1; i <= 2; i++ {
		ep := fmt.Sprintf("mkpx-%s-ep%d", id, i)
		epPath := nettest.Named(t, ep)
		nettest.Run(t, "ip", "-n", node, "link", "add", fmt.Sprintf("ep%d", i), "type", "veth", "peer", "name", "eth0", "netns", ep)
		nettest.Run(t, "ip", "-n", node, "addr", "add", fmt.Sprintf("10.99.%d.1/24", i), "dev", fmt.Sprintf("ep%d", i))
		nettest.Run(t, "ip", "-n", node, "link", "set", fmt.Sprintf("ep%d", i), "up")
		nettest.Run(t, "ip", "-n", ep, "addr", "add", fmt.Sprintf("10.99.%d.2/24", i), "dev", "eth0")
		nettest.Run(t, "ip", "-n", ep, "link", "set", "eth0", "up")
		nettest.Run(t, "ip", "-n", ep, "route", "add", "10.99.0.0/16", "via", fmt.Sprintf("10.99.%d.1", i))
		tn.eps = append(tn.eps, epPath)
		serveName(t, epPath, fmt.Sprintf("ep%d", i))
	}
	// Service addresses need a route for the first routing decision; the DNAT reroutes.
	nettest.Run(t, "ip", "-n", node, "route", "add", "10.96.0.0/12", "dev", "ep1")
	return tn
}

// serveName answers every connection on :8080 in the namespace with name.
func serveName(t *testing.T, netns, name string) {
	t.Helper()
	var l net.Listener
	err := network.InNetNS(netns, func() error {
		var err error
		l, err = net.Listen("tcp", ":8080")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, name)
			c.Close()
		}
	}()
}

// dial connects from the node namespace and returns what the server said.
func (tn *testNet) dial(addr string) (string, error) {
	var got string
	err := network.InNetNS(tn.node, func() error {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		b, err := io.ReadAll(c)
		got = string(b)
		return err
	})
	return got, err
}

func (tn *testNet) save(t *testing.T, table string) string {
	t.Helper()
	var out []byte
	err := network.InNetNS(tn.node, func() error {
		var err error
		out, err = exec.Command("iptables-save", "-c", "-t", table).Output()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestProxierAgainstTheKernel(t *testing.T) {
	tn := newTestNet(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, p := tn.startProxier(t, ctx)
	sync := func(wantFull bool) SyncResult {
		t.Helper()
		res := tn.sync(t, ctx, p)
		if res.Full != wantFull {
			t.Fatalf("sync full=%v, want %v", res.Full, wantFull)
		}
		return res
	}
	web := mkService(t, cl.Client, "web", "10.96.0.50", 80, corev1.ServiceAffinityNone)
	mkSlice(t, cl.Client, "web", "10.99.1.2", "10.99.2.2")
	mkService(t, cl.Client, "empty", "10.96.0.51", 80, corev1.ServiceAffinityNone)
	sync(true)

	nat := tn.save(t, "nat")
	for _, want := range []string{":KUBE-SERVICES", ":KUBE-SVC-", ":KUBE-SEP-", ":KUBE-MARK-MASQ", ":KUBE-POSTROUTING", ":KUBE-NODEPORTS",
		`"default/web:http cluster IP"`, "--probability 0.5000000000", "-j DNAT --to-destination 10.99.2.2:8080",
		"! -s 10.244.0.0/16 -d 10.96.0.50/32", "-m addrtype --dst-type LOCAL -j KUBE-NODEPORTS"} {
		if !strings.Contains(nat, want) {
			t.Errorf("nat table lacks %q:\n%s", want, nat)
		}
	}
	if !strings.Contains(tn.save(t, "filter"), `"default/empty:http has no endpoints"`) {
		t.Errorf("filter table lacks the REJECT of the service without endpoints")
	}

	// Both endpoints answer the cluster IP.
	seen := map[string]int{}
	for range 30 {
		got, err := tn.dial("10.96.0.50:80")
		if err != nil {
			t.Fatalf("dial the cluster IP: %v", err)
		}
		seen[got]++
	}
	if len(seen) != 2 {
		t.Errorf("answers through the cluster IP: %v, want both endpoints", seen)
	}
	// No endpoints: refused at once, not a timeout.
	start := time.Now()
	_, err := tn.dial("10.96.0.51:80")
	if !errors.Is(err, syscall.ECONNREFUSED) || time.Since(start) > time.Second {
		t.Errorf("dial a service without endpoints: %v after %v, want connection refused at once", err, time.Since(start))
	}

	// Partial sync: only the changed service's chains are written; web's keep their counters.
	mkSlice(t, cl.Client, "empty", "10.99.1.2")
	res := sync(false)
	if got, err := tn.dial("10.96.0.51:80"); err != nil || got != "ep1" {
		t.Errorf("service with its new endpoint: %q %v", got, err)
	}
	webChain := svcChain(&proxy.ServicePort{Name: "default/web:http", Protocol: corev1.ProtocolTCP})
	if !hasCountedRule(tn.save(t, "nat"), webChain) {
		t.Errorf("partial sync (%d chains written) reset the counters of the unchanged %s", res.ChainsWritten, webChain)
	}

	// ClientIP affinity pins a client to one endpoint.
	web.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	if _, err := cl.Client.CoreV1().Services("default").Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sync(false)
	pinned := map[string]int{}
	for range 15 {
		got, err := tn.dial("10.96.0.50:80")
		if err != nil {
			t.Fatal(err)
		}
		pinned[got]++
	}
	if len(pinned) != 1 {
		t.Errorf("ClientIP affinity: answers %v, want one endpoint", pinned)
	}

	// wipe runs iptables commands in the node, as someone else would.
	wipe := func(commands ...[]string) {
		t.Helper()
		err := network.InNetNS(tn.node, func() error {
			for _, args := range commands {
				if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
					return fmt.Errorf("%v: %s", err, out)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Someone flushes the tables: the canary notices, the next sync is full and repairs.
	wipe([]string{"-t", "nat", "-F"}, []string{"-t", "mangle", "-F"}, []string{"-t", "mangle", "-X"})
	sync(true)
	if _, err := tn.dial("10.96.0.50:80"); err != nil {
		t.Errorf("after an external flush and resync: %v", err)
	}
	// Only the nat table wiped (a firewall reload), no Service changed: as kube-proxy's
	// canaries in mangle, nat and filter, the next periodic sync notices and is full.
	wipe([]string{"-t", "nat", "-F"}, []string{"-t", "nat", "-X"})
	if res := sync(true); !res.PartialFailed {
		t.Error("the full sync after the failed partial one does not say a partial one failed")
	}
	if _, err := tn.dial("10.96.0.50:80"); err != nil {
		t.Errorf("after the nat table was wiped and a resync: %v", err)
	}

	// A deleted service's chains go.
	if err := cl.Client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sync(false)
	if strings.Contains(tn.save(t, "nat"), webChain) {
		t.Errorf("chain %s of the deleted service is still there", webChain)
	}

	// --cleanup leaves no chain of ours.
	err = network.InNetNS(tn.node, func() error { return Cleanup(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"nat", "filter", "mangle"} {
		if out := tn.save(t, table); strings.Contains(out, "KUBE-") {
			t.Errorf("after cleanup the %s table still has KUBE- chains:\n%s", table, out)
		}
	}
}

// tellChanges tells p the informers' events, as miniproxy's server does.
// startProxier runs a Proxier for node-1 on informers of a fresh control plane until ctx ends.
func (tn *testNet) startProxier(t *testing.T, ctx context.Context) (*controlplanetest.Cluster, *Proxier) {
	t.Helper()
	cl := controlplanetest.Start(t, nil)
	factory := informers.NewSharedInformerFactory(cl.Client, 0)
	services, slices := factory.Core().V1().Services(), factory.Discovery().V1().EndpointSlices()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p, err := New(Config{ClusterCIDR: "10.244.0.0/16"}, services.Lister(), slices.Lister(), "node-1", log)
	if err != nil {
		t.Fatal(err)
	}
	tellChanges(t, p, services.Informer(), slices.Informer())
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), services.Informer().HasSynced, slices.Informer().HasSynced)
	return cl, p
}

// sync runs one sync of p in the node namespace, once the informers have had a moment to
// see what the test just wrote.
func (tn *testNet) sync(t *testing.T, ctx context.Context, p *Proxier) SyncResult {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	var res SyncResult
	err := network.InNetNS(tn.node, func() error {
		var err error
		res, err = p.Sync(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func tellChanges(t *testing.T, p *Proxier, informers ...cache.SharedIndexInformer) {
	t.Helper()
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: p.Changed, DeleteFunc: p.Changed,
			UpdateFunc: func(old, obj any) { p.Changed(old); p.Changed(obj) }}); err != nil {
			t.Fatal(err)
		}
	}
}

// hasCountedRule: a rule of chain has matched packets ([packets:bytes] with packets > 0).
func hasCountedRule(save, chain string) bool {
	for _, line := range strings.Split(save, "\n") {
		if strings.Contains(line, "-A "+chain+" ") && strings.HasPrefix(line, "[") && !strings.HasPrefix(line, "[0:") {
			return true
		}
	}
	return false
}

func mkService(t *testing.T, c kubernetes.Interface, name, ip string, port int32, affinity corev1.ServiceAffinity) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: ip, SessionAffinity: affinity,
			Ports: []corev1.ServicePort{{Name: "http", Port: port, Protocol: corev1.ProtocolTCP}}},
	}
	created, err := c.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// mkSlice writes the EndpointSlice a controller would for a selectorless service.
func mkSlice(t *testing.T, c kubernetes.Interface, svc string, ips ...string) {
	t.Helper()
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc + "-test", Namespace: "default",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "proxier-test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	slices := c.DiscoveryV1().EndpointSlices("default")
	if cur, err := slices.Get(context.Background(), s.Name, metav1.GetOptions{}); err == nil {
		cur.Endpoints = s.Endpoints
		if _, err := slices.Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := slices.Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestLoadBalancerSourceRangesAgainstTheKernel(t *testing.T) {
	tn := newTestNet(t)
	nettest.Run(t, "ip", "-n", filepath.Base(tn.node), "route", "add", "10.200.0.0/24", "dev", "ep1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, p := tn.startProxier(t, ctx)
	sync := func() { t.Helper(); tn.sync(t, ctx, p) }
	// The node's own address towards the endpoints (10.99.1.1) is the client here.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lb", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{"10.99.1.0/24"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	svc, err := cl.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.200.0.200"}}
	if svc, err = cl.Client.CoreV1().Services("default").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mkSlice(t, cl.Client, "lb", "10.99.2.2")
	sync()
	if got, err := tn.dial("10.200.0.200:80"); err != nil || got != "ep2" {
		t.Fatalf("from an allowed source: %q %v, want ep2", got, err)
	}
	fw := fwChain(&proxy.ServicePort{Name: "default/lb:http", Protocol: corev1.ProtocolTCP})
	if nat := tn.save(t, "nat"); !strings.Contains(nat, ":"+fw) {
		t.Errorf("nat table lacks %s:\n%s", fw, nat)
	}

	// A range without this client: dropped (a timeout, not a refusal).
	svc.Spec.LoadBalancerSourceRanges = []string{"10.50.0.0/16"}
	if svc, err = cl.Client.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sync()
	if got, err := tn.dial("10.200.0.200:80"); err == nil || errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("from a source outside the ranges: %q %v, want the connection dropped", got, err)
	}
	if !hasCountedRule(tn.save(t, "filter"), "KUBE-PROXY-FIREWALL") {
		t.Errorf("the DROP in KUBE-PROXY-FIREWALL counted no packet:\n%s", tn.save(t, "filter"))
	}
	// The cluster IP is not filtered.
	if got, err := tn.dial(net.JoinHostPort(svc.Spec.ClusterIP, "80")); err != nil || got != "ep2" {
		t.Errorf("cluster IP of a firewalled service: %q %v", got, err)
	}

	// The load balancer IP as a local address of the node (as a VIP often is): the node's
	// connections to it come from it, so only kube-proxy's allowFromNode rule lets them in
	// when the ranges hold the node's address.
	nettest.Run(t, "ip", "-n", filepath.Base(tn.node), "addr", "add", "10.200.0.200/32", "dev", "lo")
	svc.Spec.LoadBalancerSourceRanges = []string{"10.99.0.0/16"}
	if _, err := cl.Client.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !p.SetNode(proxy.NodeFacts{IP: "10.99.1.1"}) {
		t.Error("SetNode with a new address says nothing changed")
	}
	sync()
	if got, err := tn.dial("10.200.0.200:80"); err != nil || got != "ep2" {
		t.Errorf("from the node to its local load balancer IP, node in the ranges: %q %v, want ep2", got, err)
	}

	// A full resync adds no second copy of the jumps into our chains.
	p.ForceFull()
	sync()
	if n := strings.Count(tn.save(t, "filter"), "-j KUBE-PROXY-FIREWALL"); n != 3 {
		t.Errorf("%d jumps to KUBE-PROXY-FIREWALL after two full syncs, want 3 (INPUT, OUTPUT, FORWARD)", n)
	}
}
