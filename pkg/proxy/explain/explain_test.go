package explain

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/network/policy"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// testdata/node.save is iptables-save -c of a test namespace after miniproxy's proxier
// wrote five services and 6 connections went to default/web's cluster IP.
func recorded(t *testing.T) Tables {
	t.Helper()
	text, err := os.ReadFile("testdata/node.save")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := ParseSave(string(text))
	if err != nil {
		t.Fatal(err)
	}
	return tables
}

func nodeLocal(ip string) bool { return ip == "10.99.1.1" || ip == "10.99.2.1" }

func chains(p Path) []string {
	var out []string
	for _, e := range p.Endpoints {
		out = append(out, e.Chain+"="+e.DNAT)
	}
	return out
}

func TestClusterIPFromAPod(t *testing.T) {
	p := Walk(recorded(t), Query{Service: "default/web:http", Protocol: "tcp", Kind: "cluster IP", DstIP: "10.96.0.50", DstPort: 80, From: "10.244.1.5", Local: nodeLocal})
	want := []string{"KUBE-SEP-L4D75WS3YKC3VQTJ=10.99.1.2:8080", "KUBE-SEP-TYWNFS3QWJJ5E6M6=10.99.2.2:8080"}
	if got := chains(p); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("endpoints %v, want %v", got, want)
	}
	for _, e := range p.Endpoints {
		if e.Probability != 0.5 || e.Packets != 3 || e.Via != "KUBE-SVC-CDGGSHYLG3RE2FKL" {
			t.Errorf("endpoint %+v: want probability 0.5, 3 packets, via KUBE-SVC-CDGGSHYLG3RE2FKL", e)
		}
	}
	if p.Verdict != "DNAT to one of 2 endpoints" {
		t.Errorf("verdict %q", p.Verdict)
	}
	if len(p.Masquerade) != 1 || !strings.HasPrefix(p.Masquerade[0], "not masqueraded") {
		t.Errorf("a pod's packet: masquerade %q, want not masqueraded", p.Masquerade)
	}
	if len(p.Hops) == 0 || p.Hops[0].Chain != "KUBE-SERVICES" || p.Hops[0].Packets != 6 {
		t.Errorf("first hop %+v, want the KUBE-SERVICES rule with its 6 packets", p.Hops)
	}
}

func TestClusterIPMasqueradeDecision(t *testing.T) {
	q := Query{Service: "default/web:http", Protocol: "tcp", Kind: "cluster IP", DstIP: "10.96.0.50", DstPort: 80, Local: nodeLocal}
	q.From = "10.99.1.1" // the node itself: outside the cluster CIDR
	if p := Walk(recorded(t), q); len(p.Masquerade) != 1 || !strings.HasPrefix(p.Masquerade[0], "masqueraded: ") {
		t.Errorf("from the node: masquerade %q", p.Masquerade)
	}
	q.From = ""
	p := Walk(recorded(t), q)
	if len(p.Masquerade) != 1 || !strings.Contains(p.Masquerade[0], "if the source is outside 10.244.0.0/16") {
		t.Errorf("unknown source: masquerade %q, want the condition", p.Masquerade)
	}
	if len(p.Endpoints) != 2 || p.Endpoints[0].Hairpin == "" {
		t.Errorf("endpoints %+v, want 2 with their hairpin masquerade", p.Endpoints)
	}
}

func TestNoEndpointsRejects(t *testing.T) {
	tables := recorded(t)
	p := Walk(tables, Query{Service: "default/empty:http", Protocol: "tcp", Kind: "cluster IP", DstIP: "10.96.0.51", DstPort: 80})
	if p.Verdict != "REJECT: default/empty:http has no endpoints" || len(p.Endpoints) != 0 {
		t.Errorf("cluster IP without endpoints: %q %v", p.Verdict, p.Endpoints)
	}
	p = Walk(tables, Query{Service: "default/empty:http", Protocol: "tcp", Kind: "node port", DstPort: 30081})
	if p.Verdict != "REJECT: default/empty:http has no endpoints" {
		t.Errorf("node port without endpoints: %q", p.Verdict)
	}
	p = Walk(tables, Query{Service: "default/x", Protocol: "tcp", Kind: "cluster IP", DstIP: "10.96.0.99", DstPort: 80})
	if !strings.HasPrefix(p.Verdict, "no rule for this destination") {
		t.Errorf("unknown destination: %q", p.Verdict)
	}
}

func TestAffinity(t *testing.T) {
	p := Walk(recorded(t), Query{Service: "default/sticky", Protocol: "tcp", Kind: "cluster IP", DstIP: "10.96.0.52", DstPort: 80, From: "10.244.1.5"})
	if !strings.Contains(p.Affinity, "10800s") || len(p.Endpoints) != 2 || p.Endpoints[0].Probability != 0.5 {
		t.Errorf("affinity %q, endpoints %+v", p.Affinity, p.Endpoints)
	}
}

func TestLoadBalancerSourceRanges(t *testing.T) {
	q := Query{Service: "default/lb:http", Protocol: "tcp", Kind: "load balancer IP", DstIP: "10.200.0.200", DstPort: 80, Local: nodeLocal}
	q.From = "192.168.7.7"
	p := Walk(recorded(t), q)
	if got := chains(p); len(got) != 1 || got[0] != "KUBE-SEP-5I57NUTB4JU5M4FS=10.99.2.2:8080" {
		t.Errorf("allowed source: endpoints %v", got)
	}
	if len(p.Masquerade) != 1 || !strings.HasPrefix(p.Masquerade[0], "masqueraded: masquerade traffic for default/lb:http external destinations") {
		t.Errorf("allowed source: masquerade %q", p.Masquerade)
	}
	q.From = "10.1.1.1"
	p = Walk(recorded(t), q)
	if len(p.Endpoints) != 0 || p.Verdict != "DROP: default/lb:http traffic not accepted by KUBE-FW-JSLCNGWSGB5JPS5Q" {
		t.Errorf("other source: endpoints %v, verdict %q", chains(p), p.Verdict)
	}
}

func TestNodePortExternalTrafficPolicyLocal(t *testing.T) {
	q := Query{Service: "default/local:http", Protocol: "tcp", Kind: "node port", DstPort: 30084, From: "203.0.113.9", Local: nodeLocal}
	p := Walk(recorded(t), q)
	if got := chains(p); len(got) != 1 || got[0] != "KUBE-SEP-TR7ZC2QT5VY2AUAI=10.99.1.2:8080" || p.Endpoints[0].Via != "KUBE-SVL-3ENVKKDUT2EZ6WIE" {
		t.Errorf("external client: endpoints %+v, want only the local one via KUBE-SVL", p.Endpoints)
	}
	if len(p.Masquerade) != 1 || !strings.HasPrefix(p.Masquerade[0], "not masqueraded") {
		t.Errorf("external client under Local policy: masquerade %q, want the client address kept", p.Masquerade)
	}
	q.From = "10.244.3.3" // a pod: the whole cluster
	if p := Walk(recorded(t), q); len(p.Endpoints) != 2 || p.Endpoints[0].Via != "KUBE-SVC-3ENVKKDUT2EZ6WIE" {
		t.Errorf("pod client: endpoints %+v, want both via KUBE-SVC", p.Endpoints)
	}
}

func TestQueriesAndOutput(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.50", Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}}}
	qs, err := Queries(svc, 0, "")
	if err != nil || len(qs) != 2 || qs[0].Kind != "cluster IP" || qs[1].Kind != "node port" || qs[1].DstPort != 30080 {
		t.Fatalf("queries %+v %v", qs, err)
	}
	if qs, err := Queries(svc, 30080, ""); err != nil || len(qs) != 1 || qs[0].Kind != "node port" {
		t.Errorf("--port 30080: %+v %v", qs, err)
	}
	if _, err := Queries(svc, 81, ""); err == nil || !strings.Contains(err.Error(), "no port or node port 81 (it has 80, 30080 (node port))") {
		t.Errorf("--port 81: %v", err)
	}
	var text bytes.Buffer
	Render(&text, Walk(recorded(t), qs[0]))
	for _, want := range []string{"default/web:http (tcp) cluster IP 10.96.0.50:80", "KUBE-SEP-L4D75WS3YKC3VQTJ", "[6 pkts, 360 bytes]", "verdict: DNAT to one of 2 endpoints"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}
	b, err := json.Marshal(Walk(recorded(t), qs[0]))
	if err != nil || !strings.Contains(string(b), `"chain":"KUBE-SEP-TYWNFS3QWJJ5E6M6"`) {
		t.Errorf("json: %s %v", b, err)
	}
	for _, bad := range []Options{{Service: "web"}, {Service: "default/web", From: "x"}, {Service: "default/web", Output: "yaml"},
		{}, {Service: "default/web", To: "default/web", From: "x/y"}, {To: "default/web"}, {To: "web", From: "x/y"}, {To: "deploy/x/y", From: "x/y"},
		{To: "x/y", From: "x/y", Protocol: "icmp"}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("options %+v accepted", bad)
		}
	}
	for _, good := range []Options{{To: "x/y", From: "x/z", Protocol: "udp"}, {To: "pod/x/y", From: "10.0.0.1"}, {To: "10.0.0.2", From: "x/z", Port: 22}, {To: "service/x/y", From: "x/z"}, {Service: "x/y", From: "x/z"}} {
		if err := good.Validate(); err != nil {
			t.Errorf("options %+v: %v", good, err)
		}
	}
	if kind, ref := (&Options{To: "service/x/y"}).target(); kind != "service" || ref != "x/y" {
		t.Errorf("--to service/x/y: %q %q", kind, ref)
	}
	if kind, ref := (&Options{To: "10.0.0.2"}).target(); kind != "address" || ref != "10.0.0.2" {
		t.Errorf("--to 10.0.0.2: %q %q", kind, ref)
	}
}

// TestPolicyCounters: a connection's verdict on both ends, with the counters of the jump,
// the deciding rule and the DROP read from a node's filter table (the controller's own rules
// for that node, with counters added), and a note for a chain enforced on another node.
func TestPolicyCounters(t *testing.T) {
	pod := func(name, node, ip string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: name, UID: types.UID(name), Labels: labels},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
	}
	a := pod("a", "node-1", "10.244.1.2", map[string]string{"app": "a"})
	b := pod("b", "node-1", "10.244.1.3", map[string]string{"role": "client"})
	c := pod("c", "node-2", "10.244.2.2", nil)
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt32(80)
	cl := &cluster{byIP: map[string]*corev1.Pod{}, state: policy.State{Node: "node-1", Pods: []*corev1.Pod{a, b, c},
		Policies: []*networkingv1.NetworkPolicy{{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "allow-client"},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}}}}}}}}}
	for _, p := range cl.state.Pods {
		cl.byIP[p.Status.PodIP] = p
	}
	// node-1's rules as the controller writes them, each rule counted 7 packets of 420 bytes.
	tables := countedRules(t, &cl.state, "[7:420]")
	conn := cl.connection(tables, nil, b, b.Status.PodIP, a.Status.PodIP, tcp, 80)
	if conn.Verdict != "allowed" || conn.Egress == nil || len(conn.Egress.IsolatedBy) != 0 || conn.Ingress == nil || conn.Ingress.By == nil || conn.Ingress.By.Policy != "x/allow-client" {
		t.Fatalf("x/b -> x/a:80: %+v", conn)
	}
	hops := conn.Ingress.Hops
	if len(hops) != 3 || hops[0].Chain != policy.TopChain || hops[1].Note != "decides" || !strings.Contains(hops[1].Rule, `"x/allow-client ingress rule 0"`) ||
		!strings.HasSuffix(hops[2].Rule, "-j DROP") || hops[1].Packets != 7 || hops[2].Bytes != 420 {
		t.Errorf("hops %+v", hops)
	}
	conn = cl.connection(tables, nil, c, c.Status.PodIP, a.Status.PodIP, tcp, 80)
	if conn.Verdict != "denied by the ingress policies of x/a" || len(conn.Ingress.Hops) != 2 || conn.Ingress.Hops[1].Note != "decides" {
		t.Errorf("x/c -> x/a:80: %+v", conn.Ingress)
	}
	var text bytes.Buffer
	RenderConnection(&text, conn)
	for _, want := range []string{"connection x/c (10.244.2.2) -> x/a (10.244.1.2) TCP 80", "ingress of x/a on node-1: isolated for ingress by x/allow-client",
		"denied: no policy selecting x/a allows ingress from x/c (10.244.2.2) on TCP 80 (policies: x/allow-client)", "[7 pkts, 420 bytes]", "verdict: denied by the ingress policies of x/a"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	// A node whose chains do not hold x/a's: the verdict stands, the counters are elsewhere.
	conn = cl.connection(Tables{"filter": {Chains: map[string][]Rule{}}}, nil, b, b.Status.PodIP, a.Status.PodIP, tcp, 80)
	if conn.Verdict != "allowed" || len(conn.Ingress.Hops) != 0 || !strings.Contains(conn.Ingress.Note, "is not on this node: it is enforced on node-1") {
		t.Errorf("on another node: %+v", conn.Ingress)
	}
	// An address that is no pod's: no egress verdict.
	if conn = cl.connection(tables, nil, nil, "192.0.2.1", a.Status.PodIP, tcp, 80); conn.Egress != nil || conn.Verdict != "denied by the ingress policies of x/a" {
		t.Errorf("from an address: %+v", conn)
	}
}

// TestPolicyToOwnNode: a local pod's connection to its own node's address is decided by the
// pod's egress chain, met from InputChain (INPUT), and named after the node.
func TestPolicyToOwnNode(t *testing.T) {
	a := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "a", UID: "a", Labels: map[string]string{"app": "a"}},
		Spec: corev1.PodSpec{NodeName: "node-1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.2"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.50.11"}}}}
	cl := &cluster{byIP: map[string]*corev1.Pod{a.Status.PodIP: a}, state: policy.State{Node: "node-1", Pods: []*corev1.Pod{a}, Nodes: []*corev1.Node{node},
		Policies: []*networkingv1.NetworkPolicy{{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "deny-egress"},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}}}}}
	tables := countedRules(t, &cl.state, "[3:180]")
	local := func(ip string) bool { return ip == "192.168.50.11" }
	conn := cl.connection(tables, local, a, a.Status.PodIP, "192.168.50.11", corev1.ProtocolTCP, 22)
	if conn.To != "node/node-1 (192.168.50.11)" || conn.Ingress != nil || conn.Verdict != "denied by the egress policies of x/a" {
		t.Fatalf("x/a -> its node: %+v", conn)
	}
	hops := conn.Egress.Hops
	if len(hops) != 2 || hops[0].Chain != policy.InputChain || !strings.Contains(hops[0].Note, "to this node") || hops[1].Note != "decides" || !strings.HasSuffix(hops[1].Rule, "-j DROP") {
		t.Errorf("hops %+v", hops)
	}
	if want := "denied: no policy selecting x/a allows egress to node/node-1 (192.168.50.11) on TCP 22 (policies: x/deny-egress)"; conn.Egress.Reason != want {
		t.Errorf("reason %q, want %q", conn.Egress.Reason, want)
	}
	// The same address seen from elsewhere (not local): FORWARD's chain.
	if conn = cl.connection(tables, func(string) bool { return false }, a, a.Status.PodIP, "192.168.50.11", corev1.ProtocolTCP, 22); conn.Egress.Hops[0].Chain != policy.TopChain {
		t.Errorf("hops %+v", conn.Egress.Hops)
	}
}

// countedRules are the rules the policy controller writes for state, as iptables-save -c
// shows them with every rule counted the same ("[PACKETS:BYTES]").
func countedRules(t *testing.T, state *policy.State, counts string) Tables {
	t.Helper()
	var save strings.Builder
	for _, line := range strings.Split(policy.Build(state).Restore(nil), "\n") {
		if strings.HasPrefix(line, "-A ") {
			line = counts + " " + line
		}
		save.WriteString(line + "\n")
	}
	tables, err := ParseSave(save.String())
	if err != nil {
		t.Fatal(err)
	}
	return tables
}
