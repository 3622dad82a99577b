package policy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/nettest"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// The connectivity matrix of Kubernetes' netpol e2e: namespaces x, y, z with pods a, b, c,
// each serving TCP and UDP on 80 and 81, here as network namespaces on a bridge inside a
// node namespace the test makes; the controller writes its iptables rules and sets there.

var (
	namespaces = []string{"x", "y", "z"}
	podNames   = []string{"a", "b", "c"}
)

// probe is a protocol and port every pod serves.
type probe struct {
	proto corev1.Protocol
	port  int
}

var (
	tcp80 = probe{corev1.ProtocolTCP, 80}
	tcp81 = probe{corev1.ProtocolTCP, 81}
	udp80 = probe{corev1.ProtocolUDP, 80}
	udp81 = probe{corev1.ProtocolUDP, 81}
)

type testPod struct {
	ns, name, ip, netns string
}

func (p *testPod) key() string { return p.ns + "/" + p.name }

type matrixNet struct {
	node string // path of the node namespace
	pods []*testPod
}

// newMatrixNet makes the node namespace with bridge br0 (10.78.0.1/24, bridged traffic
// through iptables) and one namespace per pod behind a veth on it, each serving its name.
func newMatrixNet(t *testing.T) *matrixNet {
	t.Helper()
	testenv.RequireRoot(t, "creates network namespaces and iptables rules in them")
	testenv.RequireTools(t, "ip", "iptables", "iptables-save", "iptables-restore", "ipset")
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	node := "mknp-" + id + "-node"
	names := []string{node}
	t.Cleanup(func() {
		for _, n := range names {
			_ = exec.Command("ip", "netns", "del", n).Run()
		}
	})
	nettest.Run(t, "ip", "netns", "add", node)
	nettest.Run(t, "ip", "-n", node, "link", "set", "lo", "up")
	nettest.Run(t, "ip", "-n", node, "link", "add", "br0", "type", "bridge")
	nettest.Run(t, "ip", "-n", node, "addr", "add", "10.78.0.1/24", "dev", "br0")
	nettest.Run(t, "ip", "-n", node, "link", "set", "br0", "up")
	nettest.Run(t, "ip", "netns", "exec", node, "sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=1")
	mn := &matrixNet{node: "/run/netns/" + node, pods: matrixPods()}
	for _, p := range mn.pods {
		ns, name, ip := p.ns, p.name, p.ip
		pn := fmt.Sprintf("mknp-%s-%s%s", id, ns, name)
		names = append(names, pn)
		veth := fmt.Sprintf("v%s%s", ns, name)
		nettest.Run(t, "ip", "netns", "add", pn)
		nettest.Run(t, "ip", "-n", node, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", pn)
		nettest.Run(t, "ip", "-n", node, "link", "set", veth, "master", "br0", "up")
		nettest.Run(t, "ip", "-n", pn, "addr", "add", ip+"/24", "dev", "eth0")
		nettest.Run(t, "ip", "-n", pn, "link", "set", "eth0", "up")
		nettest.Run(t, "ip", "-n", pn, "link", "set", "lo", "up")
		nettest.Run(t, "ip", "-n", pn, "route", "add", "default", "via", "10.78.0.1")
		p.netns = "/run/netns/" + pn
		serve(t, p)
	}
	return mn
}

// matrixPods are x/a ... z/c with their addresses, 10.78.0.11 to 10.78.0.19.
func matrixPods() []*testPod {
	var out []*testPod
	for _, ns := range namespaces {
		for _, name := range podNames {
			out = append(out, &testPod{ns: ns, name: name, ip: fmt.Sprintf("10.78.0.%d", 11+len(out))})
		}
	}
	return out
}

// serve answers TCP connections and UDP datagrams on 80 and 81 with the pod's key.
func serve(t *testing.T, p *testPod) {
	t.Helper()
	for _, port := range []int{80, 81} {
		var l net.Listener
		var u net.PacketConn
		err := network.InNetNS(p.netns, func() error {
			var err error
			if l, err = net.Listen("tcp", fmt.Sprintf(":%d", port)); err != nil {
				return err
			}
			u, err = net.ListenPacket("udp", fmt.Sprintf(":%d", port))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close(); u.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_, _ = io.WriteString(c, p.key())
				c.Close()
			}
		}()
		go func() {
			buf := make([]byte, 64)
			for {
				_, from, err := u.ReadFrom(buf)
				if err != nil {
					return
				}
				_, _ = u.WriteTo([]byte(p.key()), from)
			}
		}()
	}
}

// connect reports whether from reaches to on pr (the answer must name to).
func connect(from string, to *testPod, pr probe) bool {
	var got []byte
	err := network.InNetNS(from, func() error {
		c, err := net.DialTimeout(strings.ToLower(string(pr.proto)), net.JoinHostPort(to.ip, strconv.Itoa(pr.port)), time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if pr.proto == corev1.ProtocolUDP {
			if _, err := c.Write([]byte("?")); err != nil {
				return err
			}
			buf := make([]byte, 64)
			n, err := c.Read(buf)
			got = buf[:n]
			return err
		}
		got, err = io.ReadAll(c)
		return err
	})
	return err == nil && string(got) == to.key()
}

// reachability is the expected matrix: from pod key -> to pod key -> reachable.
type reachability map[string]map[string]bool

// allowAll is the matrix with every pair reachable (or none, with false).
func (mn *matrixNet) matrix(v bool) reachability {
	r := reachability{}
	for _, f := range mn.pods {
		r[f.key()] = map[string]bool{}
		for _, to := range mn.pods {
			r[f.key()][to.key()] = v
		}
	}
	return r
}

// set sets every pair whose keys match the patterns ("x/a", "x/*", "*/*").
func (r reachability) set(from, to string, v bool) reachability {
	match := func(pat, key string) bool {
		ok, _ := regexp.MatchString("^"+strings.ReplaceAll(pat, "*", "[a-z]")+"$", key)
		return ok
	}
	for f, row := range r {
		for k := range row {
			if match(from, f) && match(to, k) {
				row[k] = v
			}
		}
	}
	return r
}

// observe probes every ordered pair of distinct pods (a pod reaching itself never leaves
// its namespace) on pr, in parallel.
func (mn *matrixNet) observe(pr probe) reachability {
	r := mn.matrix(false)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 24)
	for _, f := range mn.pods {
		for _, to := range mn.pods {
			if f == to {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				ok := connect(f.netns, to, pr)
				<-sem
				mu.Lock()
				r[f.key()][to.key()] = ok
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return r
}

// diff lists the pairs where got differs from want, as the e2e prints its matrix.
func (mn *matrixNet) diff(got, want reachability) []string {
	var out []string
	for _, f := range mn.pods {
		for _, to := range mn.pods {
			if f != to && got[f.key()][to.key()] != want[f.key()][to.key()] {
				out = append(out, fmt.Sprintf("%s -> %s: got %v, want %v", f.key(), to.key(), got[f.key()][to.key()], want[f.key()][to.key()]))
			}
		}
	}
	return out
}

// expect waits (a bounded number of rounds) until the observed matrix on pr is want.
func (mn *matrixNet) expect(t *testing.T, what string, pr probe, want reachability) {
	t.Helper()
	var d []string
	for round := 0; round < 4; round++ {
		time.Sleep(time.Duration(round) * 700 * time.Millisecond)
		if d = mn.diff(mn.observe(pr), want); len(d) == 0 {
			return
		}
	}
	t.Errorf("%s on %s/%d: %d pairs differ:\n%s", what, pr.proto, pr.port, len(d), strings.Join(d, "\n"))
}

// cluster is the API side: namespaces x, y, z (label ns=NAME) with pods a, b, c (label
// pod=NAME, ports named serve-80-tcp ... serve-81-udp) on node "node1", IPs as in mn.
type cluster struct {
	client kubernetes.Interface
}

func newCluster(t *testing.T, mn *matrixNet) *cluster {
	t.Helper()
	c := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"serviceaccount"} })
	ctx := context.Background()
	for _, ns := range namespaces {
		_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"ns": ns}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range mn.pods {
		created, err := c.Client.CoreV1().Pods(p.ns).Create(ctx, p.apiPod(), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = p.status()
		if _, err := c.Client.CoreV1().Pods(p.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &cluster{client: c.Client}
}

// apiPod is p as the API holds it (label pod=NAME, ports named serve-80-tcp ... serve-81-udp)
// on node1, without its status.
func (p *testPod) apiPod() *corev1.Pod {
	var ports []corev1.ContainerPort
	for _, pr := range []probe{tcp80, tcp81, udp80, udp81} {
		ports = append(ports, corev1.ContainerPort{Name: fmt.Sprintf("serve-%d-%s", pr.port, strings.ToLower(string(pr.proto))), ContainerPort: int32(pr.port), Protocol: pr.proto})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.ns, Labels: map[string]string{"pod": p.name}},
		Spec:       corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "c", Image: "agnhost", Ports: ports}}},
	}
}

func (p *testPod) status() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, PodIP: p.ip, PodIPs: []corev1.PodIP{{IP: p.ip}}}
}

// Policy makers, as the e2e writes its cases.

func sel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func policy(ns, name string, target *metav1.LabelSelector, types ...networkingv1.PolicyType) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: *target, PolicyTypes: types}}
}

func withIngress(np *networkingv1.NetworkPolicy, rules ...networkingv1.NetworkPolicyIngressRule) *networkingv1.NetworkPolicy {
	np.Spec.Ingress = rules
	return np
}

func withEgress(np *networkingv1.NetworkPolicy, rules ...networkingv1.NetworkPolicyEgressRule) *networkingv1.NetworkPolicy {
	np.Spec.Egress = rules
	return np
}

func port(proto corev1.Protocol, p intstr.IntOrString, end ...int32) networkingv1.NetworkPolicyPort {
	np := networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &p}
	if len(end) > 0 {
		np.EndPort = &end[0]
	}
	return np
}

const (
	ingress = networkingv1.PolicyTypeIngress
	egress  = networkingv1.PolicyTypeEgress
)

// matrixCase applies policies (after step, if any), then checks the matrix on each probe.
type matrixCase struct {
	name     string
	policies []*networkingv1.NetworkPolicy
	relabel  *relabeling                                   // a pod's new labels, set before the policies are applied
	step     func(t *testing.T, c *cluster, mn *matrixNet) // a change of the node's rules, made first
	expect   map[probe]func(mn *matrixNet) reachability
	keep     bool // keep the policies for the next case (an update of them)
	check    func(t *testing.T, mn *matrixNet)
}

func onlyTCP80(f func(mn *matrixNet) reachability) map[probe]func(mn *matrixNet) reachability {
	return map[probe]func(mn *matrixNet) reachability{tcp80: f}
}

func allowAll(mn *matrixNet) reachability { return mn.matrix(true) }

// denyTo is the matrix where nothing but from (a pattern) reaches to (a pattern).
func only(to string, from ...string) func(mn *matrixNet) reachability {
	return func(mn *matrixNet) reachability {
		r := mn.matrix(true).set("*/*", to, false)
		for _, f := range from {
			r.set(f, to, true)
		}
		return r
	}
}

// relabeling gives pod ns/name new labels.
type relabeling struct {
	ns, name string
	labels   map[string]string
}

func relabel(ns, name string, labels map[string]string) *relabeling {
	return &relabeling{ns, name, labels}
}

func (r *relabeling) apply(t *testing.T, c *cluster) {
	t.Helper()
	ctx := context.Background()
	p, err := c.client.CoreV1().Pods(r.ns).Get(ctx, r.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels = r.labels
	if _, err := c.client.CoreV1().Pods(r.ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func matrixCases() []matrixCase {
	xa := sel("pod", "a")
	tcp, udp, sctp := corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP
	return []matrixCase{
		{name: "no policy", expect: map[probe]func(*matrixNet) reachability{tcp80: allowAll, udp81: allowAll}},
		{name: "default deny ingress in x",
			policies: []*networkingv1.NetworkPolicy{policy("x", "deny", sel(), ingress)},
			expect:   map[probe]func(*matrixNet) reachability{tcp80: only("x/*"), udp80: only("x/*")},
			check:    nodeReachesAndDropsCounted},
		{name: "default deny egress in x",
			policies: []*networkingv1.NetworkPolicy{policy("x", "deny", sel(), egress)},
			expect: onlyTCP80(func(mn *matrixNet) reachability {
				return mn.matrix(true).set("x/*", "*/*", false)
			})},
		{name: "deny all and allow all ingress: the union allows",
			policies: []*networkingv1.NetworkPolicy{policy("x", "deny", sel(), ingress),
				withIngress(policy("x", "allow", sel(), ingress), networkingv1.NetworkPolicyIngressRule{})},
			expect: onlyTCP80(allowAll)},
		{name: "ingress from a podSelector",
			policies: []*networkingv1.NetworkPolicy{withIngress(policy("x", "from-b", xa, ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("pod", "b")}}})},
			expect: onlyTCP80(only("x/a", "x/b")), keep: true},
		{name: "policy update: another podSelector",
			policies: []*networkingv1.NetworkPolicy{withIngress(policy("x", "from-b", xa, ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("pod", "c")}}})},
			expect: onlyTCP80(only("x/a", "x/c")), keep: true},
		{name: "peer label change: x/b labelled pod=c",
			relabel: relabel("x", "b", map[string]string{"pod": "c"}),
			expect:  onlyTCP80(only("x/a", "x/c", "x/b")), keep: true},
		{name: "peer label change back",
			relabel: relabel("x", "b", map[string]string{"pod": "b"}),
			expect:  onlyTCP80(only("x/a", "x/c"))},
		{name: "ingress from a namespaceSelector",
			policies: []*networkingv1.NetworkPolicy{withIngress(policy("x", "from-y", xa, ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("ns", "y")}}})},
			expect: onlyTCP80(only("x/a", "y/*"))},
		{name: "ingress from namespaceSelector and podSelector in one peer",
			policies: []*networkingv1.NetworkPolicy{withIngress(policy("x", "from-yc", xa, ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("ns", "y"), PodSelector: sel("pod", "c")}}})},
			expect: onlyTCP80(only("x/a", "y/c"))},
		{name: "ingress from namespaceSelector or podSelector (two peers)",
			policies: []*networkingv1.NetworkPolicy{withIngress(policy("x", "from-y-or-c", xa, ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("ns", "y")}, {PodSelector: sel("pod", "c")}}})},
			expect: onlyTCP80(only("x/a", "y/*", "x/c"))},
		{name: "ingress from namespaces by matchExpressions",
			policies: []*networkingv1.NetworkPolicy{withIngress(policy("x", "not-x", xa, ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "ns", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}}}}}}})},
			expect: onlyTCP80(only("x/a", "y/*", "z/*"))},
		{name: "ingress on TCP 81 (and SCTP 80) only",
			policies: []*networkingv1.NetworkPolicy{withIngress(policy("x", "tcp81", xa, ingress),
				networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromInt32(81)), port(sctp, intstr.FromInt32(80))}})},
			expect: map[probe]func(*matrixNet) reachability{tcp80: only("x/a"), tcp81: allowAll, udp81: only("x/a")}},
		{name: "ingress on a named port",
			policies: []*networkingv1.NetworkPolicy{withIngress(policy("x", "named", xa, ingress),
				networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromString("serve-81-tcp"))}})},
			expect: map[probe]func(*matrixNet) reachability{tcp80: only("x/a"), tcp81: allowAll}},
		{name: "ingress on a named UDP port from namespace y",
			policies: []*networkingv1.NetworkPolicy{withIngress(policy("x", "named-udp", xa, ingress),
				networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{port(udp, intstr.FromString("serve-80-udp"))},
					From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("ns", "y")}}})},
			expect: map[probe]func(*matrixNet) reachability{udp80: only("x/a", "y/*"), udp81: only("x/a"), tcp80: only("x/a")}},
		{name: "ingress on a port range (endPort)",
			policies: []*networkingv1.NetworkPolicy{withIngress(policy("x", "range", xa, ingress),
				networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromInt32(79), 81)}})},
			expect: map[probe]func(*matrixNet) reachability{tcp80: allowAll, tcp81: allowAll, udp80: only("x/a")}},
		{name: "ingress from an ipBlock with except",
			policies: []*networkingv1.NetworkPolicy{withIngress(policy("x", "cidr", xa, ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.78.0.0/24", Except: []string{"10.78.0.15/32"}}}}})},
			expect: onlyTCP80(func(mn *matrixNet) reachability { return mn.matrix(true).set("y/b", "x/a", false) })},
		{name: "egress to a namespaceSelector",
			policies: []*networkingv1.NetworkPolicy{withEgress(policy("x", "to-y", xa, egress),
				networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("ns", "y")}}})},
			expect: onlyTCP80(func(mn *matrixNet) reachability {
				return mn.matrix(true).set("x/a", "*/*", false).set("x/a", "y/*", true)
			})},
		{name: "egress to 0.0.0.0/0 except one pod (and an IPv6 block, ignored)",
			policies: []*networkingv1.NetworkPolicy{withEgress(policy("x", "to-cidr", xa, egress),
				networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.78.0.19/32"}}}, {IPBlock: &networkingv1.IPBlock{CIDR: "fd00::/8"}}}})},
			expect: onlyTCP80(func(mn *matrixNet) reachability { return mn.matrix(true).set("x/a", "z/c", false) })},
		{name: "egress to a named port of any pod",
			policies: []*networkingv1.NetworkPolicy{withEgress(policy("x", "to-named", xa, egress),
				networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromString("serve-81-tcp"))}})},
			expect: map[probe]func(*matrixNet) reachability{
				tcp80: func(mn *matrixNet) reachability { return mn.matrix(true).set("x/a", "*/*", false) },
				tcp81: allowAll}},
		{name: "egress on UDP 80 only: replies pass",
			policies: []*networkingv1.NetworkPolicy{withEgress(policy("x", "udp80", xa, egress),
				networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{port(udp, intstr.FromInt32(80))}})},
			expect: map[probe]func(*matrixNet) reachability{
				udp80: allowAll,
				tcp80: func(mn *matrixNet) reachability { return mn.matrix(true).set("x/a", "*/*", false) }}},
		{name: "deny all both ways for x/a",
			policies: []*networkingv1.NetworkPolicy{policy("x", "isolate", xa, ingress, egress)},
			expect: onlyTCP80(func(mn *matrixNet) reachability {
				return mn.matrix(true).set("x/a", "*/*", false).set("*/*", "x/a", false)
			})},
		{name: "egress to y and ingress of y/a from x/b",
			policies: []*networkingv1.NetworkPolicy{
				withEgress(policy("x", "to-y", sel(), egress), networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("ns", "y")}}}),
				withIngress(policy("y", "from-xb", xa, ingress), networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("ns", "x"), PodSelector: sel("pod", "b")}}}),
			},
			expect: onlyTCP80(func(mn *matrixNet) reachability {
				return mn.matrix(true).set("x/*", "*/*", false).set("x/*", "y/*", true).set("*/*", "y/a", false).set("x/b", "y/a", true)
			})},
		{name: "an ACCEPT inserted above the jump in FORWARD does not bypass the policies",
			step:     acceptFirstInForward,
			policies: []*networkingv1.NetworkPolicy{policy("x", "deny", sel(), ingress)},
			expect:   onlyTCP80(only("x/*"))},
		{name: "target label change: x/a no longer selected",
			policies: []*networkingv1.NetworkPolicy{policy("x", "deny-a", xa, ingress)},
			relabel:  relabel("x", "a", map[string]string{"pod": "renamed"}),
			expect:   onlyTCP80(allowAll)},
	}
}

// TestConnectivityMatrix runs the netpol e2e's cases against the controller on a real
// miniapi, writing real iptables rules and ipsets in the test's node namespace.
func TestConnectivityMatrix(t *testing.T) {
	mn := newMatrixNet(t)
	c := newCluster(t, mn)
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(c.client, 0)
	ctrl := New(factory, "node1", slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctrl.NetNS = mn.node
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
		cleanedUp(t, mn)
	})
	nps := c.client.NetworkingV1()
	for _, tc := range matrixCases() {
		t.Run(tc.name, func(t *testing.T) {
			if tc.step != nil {
				tc.step(t, c, mn)
			}
			if tc.relabel != nil {
				tc.relabel.apply(t, c)
			}
			for _, np := range tc.policies {
				_, err := nps.NetworkPolicies(np.Namespace).Create(ctx, np, metav1.CreateOptions{})
				if err != nil && strings.Contains(err.Error(), "already exists") {
					old, gerr := nps.NetworkPolicies(np.Namespace).Get(ctx, np.Name, metav1.GetOptions{})
					if gerr != nil {
						t.Fatal(gerr)
					}
					np.ResourceVersion = old.ResourceVersion
					_, err = nps.NetworkPolicies(np.Namespace).Update(ctx, np, metav1.UpdateOptions{})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for pr, want := range tc.expect {
				mn.expect(t, tc.name, pr, want(mn))
			}
			if tc.check != nil {
				tc.check(t, mn)
			}
			if !tc.keep {
				for _, ns := range namespaces {
					if err := nps.NetworkPolicies(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				relabel("x", "a", map[string]string{"pod": "a"}).apply(t, c)
			}
		})
	}
}

// nodeReachesAndDropsCounted: under x's default deny the node itself still reaches x/a
// (probes), and the drops of x/a's ingress are counted on its DROP rule.
func nodeReachesAndDropsCounted(t *testing.T, mn *matrixNet) {
	t.Helper()
	xa := mn.pods[0]
	if !connect(mn.node, xa, tcp80) {
		t.Error("the node cannot reach x/a under a default deny")
	}
	var out []byte
	err := network.InNetNS(mn.node, func() error {
		var err error
		out, err = exec.Command("iptables-save", "-c", "-t", "filter").Output()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\[(\d+):\d+\] -A MKNP-I-\S+ -m comment --comment "x/a ingress denied" -j DROP`).FindSubmatch(out)
	if m == nil || string(m[1]) == "0" {
		t.Errorf("no counted drop for x/a's ingress in:\n%s", out)
	}
}

// cleanedUp: Cleanup (minilet network --cleanup) leaves no jump, chain or set of ours.
func cleanedUp(t *testing.T, mn *matrixNet) {
	t.Helper()
	var rules, sets []byte
	err := network.InNetNS(mn.node, func() error {
		if err := Cleanup(context.Background()); err != nil {
			return err
		}
		var err error
		if rules, err = exec.Command("iptables-save", "-t", "filter").Output(); err != nil {
			return err
		}
		sets, err = exec.Command("ipset", "list", "-n").Output()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rules), "MKNP-") || strings.Contains(string(rules), TopChain) || strings.Contains(string(sets), "MKNP-") {
		t.Errorf("left after Cleanup:\n%s\n%s", rules, sets)
	}
}

// acceptFirstInForward puts an ACCEPT of everything first in the node's FORWARD chain, as a
// service proxy restarting after minilet inserts its jumps; the next sync moves ours back
// on top.
func acceptFirstInForward(t *testing.T, _ *cluster, mn *matrixNet) {
	t.Helper()
	err := network.InNetNS(mn.node, func() error {
		return exec.Command("iptables", "-I", "FORWARD", "1", "-j", "ACCEPT").Run()
	})
	if err != nil {
		t.Fatal(err)
	}
}
