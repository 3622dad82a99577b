package policy

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/network/nettest"
	"github.com/minik8s/minik8s/pkg/network/policy/policytest"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
	anpinformers "sigs.k8s.io/network-policy-api/pkg/client/informers/externalversions"
)

// TestEgressToOwnNode: a pod's connections to its own node (INPUT, not FORWARD) obey its
// egress policies as any other destination: a deny-all denies the node's address, an ipBlock
// holding it allows it, an ANP denying the `nodes` peer that selects the node denies it; a
// Service DNATed to the node is decided on the node's address and port. Through all of it
// the node still reaches the pod (probes), and its own connections to itself pass.
func TestEgressToOwnNode(t *testing.T) {
	mn := newMatrixNet(t)
	// node1 is the node namespace itself, its address the bridge's, serving "node/1".
	node := &testPod{ns: "node", name: "1", ip: "10.78.0.1", netns: mn.node}
	serve(t, node)
	// A Service whose endpoint is the node: 10.96.0.10:80 DNATed to the node's port 81.
	svc := &testPod{ns: node.ns, name: node.name, ip: "10.96.0.10"}
	nettest.Run(t, "ip", "netns", "exec", strings.TrimPrefix(mn.node, "/run/netns/"),
		"iptables", "-t", "nat", "-A", "PREROUTING", "-d", svc.ip, "-p", "tcp", "--dport", "80", "-j", "DNAT", "--to-destination", node.ip+":81")
	c := newCluster(t, mn)
	ctx := t.Context()
	created, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Labels: map[string]string{"role": "worker"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: node.ip}, {Type: corev1.NodeHostName, Address: "node1"}}
	if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	anps := anpClient(t, ctx, c.config, installExperimental)
	startController(t, mn, c, func(ctrl *Controller, core informers.SharedInformerFactory) {
		ctrl.WithAdminPolicies(anpinformers.NewSharedInformerFactory(anps, 0), core)
	})
	pod := map[string]*testPod{}
	for _, p := range mn.pods {
		pod[p.key()] = p
	}
	xa, xb := pod["x/a"], pod["x/b"]
	// reaches polls until from reaching to on pr is want.
	reaches := func(what string, from string, to *testPod, pr policytest.Probe, want bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return connect(from, to, pr) == want, nil
		})
		if err != nil {
			t.Errorf("%s: %s reaching %s %s on %s is not %v", what, strings.TrimPrefix(from, "/run/netns/"), to.key(), to.ip, pr, want)
		}
	}
	tcp81 := policytest.TCP81
	reaches("no policy", xa.netns, node, tcp80, true)
	reaches("no policy", xa.netns, svc, tcp80, true)

	nps := c.client.NetworkingV1().NetworkPolicies("x")
	create := func(np *networkingv1.NetworkPolicy) {
		t.Helper()
		if _, err := nps.Create(ctx, np, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create(policy("x", "deny-all", sel("pod", "a"), ingress, egress))
	reaches("deny-all on x/a", xa.netns, node, tcp80, false)
	reaches("deny-all on x/a", xa.netns, svc, tcp80, false)
	reaches("deny-all on x/a", xb.netns, node, tcp80, true)
	reaches("deny-all on x/a: the node probes it", mn.node, xa, tcp80, true)
	reaches("deny-all on x/a: the node reaches itself", mn.node, node, tcp80, true)

	// The node's address and port 81 only: the Service, DNATed there, passes; port 80 not.
	create(policytest.WithEgress(policy("x", "node-81", sel("pod", "a"), egress), networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: node.ip + "/32"}}},
		Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, intstr.FromInt32(81))},
	}))
	reaches("ipBlock of the node on 81", xa.netns, node, tcp81, true)
	reaches("ipBlock of the node on 81", xa.netns, svc, tcp80, true)
	reaches("ipBlock of the node on 81", xa.netns, node, tcp80, false)
	reaches("ipBlock of the node on 81", xa.netns, pod["y/b"], tcp81, false)
	if err := nps.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	reaches("no policy again", xa.netns, node, tcp80, true)

	anp := policytest.ANP("no-nodes", 5, sel("ns", "x"))
	anp.Spec.Egress = []anpv1alpha1.AdminNetworkPolicyEgressRule{{Name: "nodes", Action: anpv1alpha1.AdminNetworkPolicyRuleActionDeny,
		To: []anpv1alpha1.AdminNetworkPolicyEgressPeer{{Nodes: sel("role", "worker")}}}}
	createWhenServed(t, ctx, anps, anp)
	reaches("ANP denying x egress to the nodes", xa.netns, node, tcp80, false)
	reaches("ANP denying x egress to the nodes", xb.netns, node, tcp81, false)
	reaches("ANP denying x egress to the nodes", pod["y/a"].netns, node, tcp80, true)
	reaches("ANP denying x egress to the nodes", xa.netns, pod["y/b"], tcp80, true)
	reaches("ANP denying x egress to the nodes: the node probes x/a", mn.node, xa, tcp80, true)
	if err := anps.PolicyV1alpha1().AdminNetworkPolicies().Delete(ctx, anp.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reaches("ANP deleted", xa.netns, node, tcp80, true)
	inputJumpFirst(t, mn)
}

// inputJumpFirst: INPUT's first rule is the jump to InputChain.
func inputJumpFirst(t *testing.T, mn *matrixNet) {
	t.Helper()
	var rules string
	nettest.In(t, mn.node, func() error {
		out, err := exec.Command("iptables", "-S", "INPUT").Output()
		rules = string(out)
		return err
	})
	if lines := strings.Split(rules, "\n"); len(lines) < 2 || !strings.HasSuffix(lines[1], "-j "+InputChain) {
		t.Errorf("INPUT does not start with the jump to %s:\n%s", InputChain, rules)
	}
}

// TestVerdictToOwnNode: explain's verdict of a pod's connection to its own node names the
// rule, as for any destination: the ANP's node peer selecting that node denies it, and under
// a NetworkPolicy an ipBlock holding the node's address allows it.
func TestVerdictToOwnNode(t *testing.T) {
	s, xa := nodePeerState()
	s.Nodes = append(s.Nodes, stateNode("node1", map[string]string{"role": "infra"}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.168.0.1"}))
	toNode := Connection{Src: "10.0.0.1", Dst: "192.168.0.1", Protocol: corev1.ProtocolTCP, Port: 10250, SrcName: "x/a", DstName: "node/node1"}
	if v := Decide(s, xa, egress, toNode); v.Allowed || v.By == nil || v.By.Name != "infra" {
		t.Errorf("x/a -> its own node under the ANP denying role=infra: %+v", v)
	}
	s.AdminPolicies = nil
	s.Policies = []*networkingv1.NetworkPolicy{policytest.WithEgress(policy("x", "to-node", sel("pod", "a"), egress), networkingv1.NetworkPolicyEgressRule{
		To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "192.168.0.1/32"}}}})}
	want := "allowed by x/to-node egress rule 0 (to IPBlock 192.168.0.1/32, on any port)"
	if v := Decide(s, xa, egress, toNode); !v.Allowed || v.Reason != want {
		t.Errorf("x/a -> its own node under an ipBlock of it: %+v, want %q", v, want)
	}
	if v := Decide(s, xa, egress, Connection{Src: "10.0.0.1", Dst: "192.168.0.3", Protocol: corev1.ProtocolTCP, Port: 10250}); v.Allowed {
		t.Errorf("x/a -> node3 outside the ipBlock: %+v", v)
	}
	// The rules: InputChain jumps to x/a's egress chain, and holds no ingress jump.
	var input []string
	for _, c := range Build(s).Chains {
		if c.Name == InputChain {
			input = c.Rules
		}
	}
	if len(input) != 2 || !strings.Contains(input[0], "RELATED,ESTABLISHED -j RETURN") || !strings.HasSuffix(input[1], "-j "+ChainName(xa, egress)) {
		t.Errorf("%s: %q", InputChain, input)
	}
	// The Service ranges pass it before the jumps: in IPVS mode the cluster IPs are the
	// node's own and reach INPUT before IPVS translates them.
	s.ServiceCIDRs = []string{"10.96.0.0/12", "fd00:10:96::/108"}
	input = nil
	for _, c := range Build(s).Chains {
		if c.Name == InputChain {
			input = c.Rules
		}
	}
	if len(input) != 3 || !strings.HasPrefix(input[1], "-d 10.96.0.0/12 ") || !strings.HasSuffix(input[1], "-j RETURN") ||
		!strings.HasSuffix(input[2], "-j "+ChainName(xa, egress)) { // the IPv6 range: not in IPv4's rules
		t.Errorf("%s with Service ranges: %q", InputChain, input)
	}
}
