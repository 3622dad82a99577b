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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/nettest"
	"github.com/minik8s/minik8s/pkg/network/policy/policytest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The connectivity matrix of Kubernetes' netpol e2e: namespaces x, y, z with pods a, b, c,
// each serving TCP and UDP on 80 and 81, here as network namespaces on a bridge inside a
// node namespace the test makes; the controller writes its iptables rules and sets there.

// Short names for the shared data, as the other tests here write their policies.
var (
	sel         = policytest.Sel
	policy      = policytest.Policy
	withIngress = policytest.WithIngress
	port        = policytest.Port
	tcp80       = policytest.TCP80
)

const (
	ingress = policytest.Ingress
	egress  = policytest.Egress
)

type testPod struct {
	ns, name, ip, netns string
}

func (p *testPod) key() string { return p.ns + "/" + p.name }

type matrixNet struct {
	node string // path of the node namespace
	id   string // in the names of its namespaces
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
	nodePath := nettest.Named(t, node)
	nettest.Run(t, "ip", "-n", node, "link", "add", "br0", "type", "bridge")
	nettest.Run(t, "ip", "-n", node, "addr", "add", "10.78.0.1/24", "dev", "br0")
	nettest.Run(t, "ip", "-n", node, "link", "set", "br0", "up")
	nettest.Run(t, "ip", "netns", "exec", node, "sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=1")
	mn := &matrixNet{node: nodePath, id: id, pods: matrixPods()}
	for _, p := range mn.pods {
		mn.attach(t, p)
	}
	return mn
}

// attach makes p's namespace behind a veth on the bridge, serving its key.
func (mn *matrixNet) attach(t *testing.T, p *testPod) {
	t.Helper()
	node := strings.TrimPrefix(mn.node, "/run/netns/")
	pn := fmt.Sprintf("mknp-%s-%s%s", mn.id, p.ns, p.name)
	veth := fmt.Sprintf("v%s%s", p.ns, p.name)
	p.netns = nettest.Named(t, pn)
	nettest.Run(t, "ip", "-n", node, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", pn)
	nettest.Run(t, "ip", "-n", node, "link", "set", veth, "master", "br0", "up")
	nettest.Run(t, "ip", "-n", pn, "addr", "add", p.ip+"/24", "dev", "eth0")
	nettest.Run(t, "ip", "-n", pn, "link", "set", "eth0", "up")
	nettest.Run(t, "ip", "-n", pn, "route", "add", "default", "via", "10.78.0.1")
	serve(t, p)
}

// matrixPods are x/a ... z/c with their addresses, 10.78.0.11 to 10.78.0.19.
func matrixPods() []*testPod {
	var out []*testPod
	for _, key := range policytest.PodKeys() {
		ns, name, _ := strings.Cut(key, "/")
		out = append(out, &testPod{ns: ns, name: name, ip: fmt.Sprintf("10.78.0.%d", 11+len(out))})
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
func connect(from string, to *testPod, pr policytest.Probe) bool {
	var request []byte
	if pr.Proto == corev1.ProtocolUDP {
		request = []byte("?")
	}
	got, err := policytest.Exchange(from, to.ip, pr, request)
	return err == nil && string(got) == to.key()
}

// observe probes every ordered pair of distinct pods (a pod reaching itself never leaves
// its namespace) on pr, in parallel.
func (mn *matrixNet) observe(pr policytest.Probe) policytest.Reachability {
	r := policytest.Matrix(false)
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

// expect waits (a bounded number of rounds) until the observed matrix on pr is want.
func (mn *matrixNet) expect(t *testing.T, what string, pr policytest.Probe, want policytest.Reachability) {
	t.Helper()
	var d []string
	for round := 0; round < 4; round++ {
		time.Sleep(time.Duration(round) * 700 * time.Millisecond)
		if d = want.Diff(mn.observe(pr)); len(d) == 0 {
			return
		}
	}
	t.Errorf("%s on %s: %d pairs differ:\n%s", what, pr, len(d), strings.Join(d, "\n"))
}

// cluster is the API side: namespaces x, y, z (label ns=NAME) with pods a, b, c (label
// pod=NAME, ports named serve-80-tcp ... serve-81-udp) on node "node1", IPs as in mn.
type cluster struct {
	client kubernetes.Interface
	config *rest.Config
}

func newCluster(t *testing.T, mn *matrixNet) *cluster {
	t.Helper()
	c := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"serviceaccount"} })
	ctx := context.Background()
	for _, ns := range policytest.Namespaces {
		c.CreateNamespace(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"ns": ns}}})
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
	return &cluster{client: c.Client, config: c.Config}
}

// apiPod is p as the API holds it (label pod=NAME, ports named serve-80-tcp ... serve-81-udp)
// on node1, without its status.
func (p *testPod) apiPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.ns, Labels: map[string]string{"pod": p.name}},
		Spec:       corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "c", Image: "agnhost", Ports: policytest.ContainerPorts()}}},
	}
}

func (p *testPod) status() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, PodIP: p.ip, PodIPs: []corev1.PodIP{{IP: p.ip}}}
}

// relabel gives a pod new labels through the API.
func relabel(t *testing.T, c *cluster, r policytest.Relabeling) {
	t.Helper()
	ctx := context.Background()
	p, err := c.client.CoreV1().Pods(r.NS).Get(ctx, r.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels = r.Labels
	if _, err := c.client.CoreV1().Pods(r.NS).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// matrixCases are the shared cases with this test's pod addresses (all in 10.78.0.0/24).
func matrixCases() []policytest.Case {
	ips := map[string]string{}
	for _, p := range matrixPods() {
		ips[p.key()] = p.ip
	}
	return policytest.Cases("10.78.0.0/24", func(key string) string { return ips[key] })
}

// startController runs node1's controller against the cluster, set up further by with,
// writing rules in the matrix's node namespace; with gets its core informer factory. It is stopped at cleanup, and must have
// left nothing behind. The context returned ends with it.
func startController(t *testing.T, mn *matrixNet, c *cluster, with func(*Controller, informers.SharedInformerFactory)) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(c.client, 0)
	ctrl := New(factory, "node1", slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctrl.NetNS = mn.node
	with(ctrl, factory)
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
		cleanedUp(t, mn)
	})
	return ctx
}

// TestConnectivityMatrix runs the netpol e2e's cases against the controller on a real
// miniapi, writing real iptables rules and ipsets in the test's node namespace.
func TestConnectivityMatrix(t *testing.T) {
	mn := newMatrixNet(t)
	c := newCluster(t, mn)
	ctx := startController(t, mn, c, func(*Controller, informers.SharedInformerFactory) {})
	nps := c.client.NetworkingV1()
	for _, tc := range matrixCases() {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.AcceptFirstInForward {
				acceptFirstInForward(t, mn)
			}
			if tc.Relabel != nil {
				relabel(t, c, *tc.Relabel)
			}
			for _, np := range tc.Policies {
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
			for pr, want := range tc.Expect {
				mn.expect(t, tc.Name, pr, want)
			}
			if tc.CheckNodeAndDrops {
				nodeReachesAndDropsCounted(t, mn)
			}
			if !tc.Keep {
				for _, ns := range policytest.Namespaces {
					if err := nps.NetworkPolicies(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				relabel(t, c, policytest.Restore)
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
func acceptFirstInForward(t *testing.T, mn *matrixNet) {
	t.Helper()
	err := network.InNetNS(mn.node, func() error {
		return exec.Command("iptables", "-I", "FORWARD", "1", "-j", "ACCEPT").Run()
	})
	if err != nil {
		t.Fatal(err)
	}
}
