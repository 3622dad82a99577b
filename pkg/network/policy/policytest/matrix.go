// Package policytest holds the connectivity matrix of Kubernetes' netpol e2e as data:
// namespaces x, y, z with pods a, b, c serving TCP and UDP on 80 and 81, the policy cases
// applied to them and the reachability each case expects. The controller's unit test (pods
// as network namespaces on one bridge) and the 3-node minilab e2e (real pods) both run it,
// each with its own way of making pods and probing them.
package policytest

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
)

var (
	// Namespaces are labelled ns=NAME.
	Namespaces = []string{"x", "y", "z"}
	// PodNames are the pods of every namespace, labelled pod=NAME.
	PodNames = []string{"a", "b", "c"}
)

// PodKeys are "x/a" ... "z/c" in that order.
func PodKeys() []string {
	var out []string
	for _, ns := range Namespaces {
		for _, name := range PodNames {
			out = append(out, ns+"/"+name)
		}
	}
	return out
}

// Probe is a protocol and port every pod serves.
type Probe struct {
	Proto corev1.Protocol
	Port  int
}

var (
	TCP80 = Probe{corev1.ProtocolTCP, 80}
	TCP81 = Probe{corev1.ProtocolTCP, 81}
	UDP80 = Probe{corev1.ProtocolUDP, 80}
	UDP81 = Probe{corev1.ProtocolUDP, 81}
)

func (p Probe) String() string { return fmt.Sprintf("%s/%d", p.Proto, p.Port) }

// PortName is the name a pod gives the port, as named-port policies refer to it.
func (p Probe) PortName() string {
	return fmt.Sprintf("serve-%d-%s", p.Port, strings.ToLower(string(p.Proto)))
}

// ContainerPorts are the four ports every pod declares, named by PortName.
func ContainerPorts() []corev1.ContainerPort {
	var ports []corev1.ContainerPort
	for _, pr := range []Probe{TCP80, TCP81, UDP80, UDP81} {
		ports = append(ports, corev1.ContainerPort{Name: pr.PortName(), ContainerPort: int32(pr.Port), Protocol: pr.Proto})
	}
	return ports
}

// Reachability is a matrix: from pod key -> to pod key -> reachable.
type Reachability map[string]map[string]bool

// Matrix has every pair reachable (v true) or none.
func Matrix(v bool) Reachability {
	r := Reachability{}
	for _, f := range PodKeys() {
		r[f] = map[string]bool{}
		for _, to := range PodKeys() {
			r[f][to] = v
		}
	}
	return r
}

// Set sets every pair whose keys match the patterns ("x/a", "x/*", "*/*").
func (r Reachability) Set(from, to string, v bool) Reachability {
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

// Diff lists the pairs of distinct pods (a pod reaching itself never leaves its network
// namespace) where got differs from the expected r, as the e2e prints its matrix.
func (r Reachability) Diff(got Reachability) []string {
	var out []string
	for _, f := range PodKeys() {
		for _, to := range PodKeys() {
			if f != to && got[f][to] != r[f][to] {
				out = append(out, fmt.Sprintf("%s -> %s: got %v, want %v", f, to, got[f][to], r[f][to]))
			}
		}
	}
	return out
}

// only is the matrix where nothing but from (patterns) reaches to (a pattern).
func only(to string, from ...string) Reachability {
	r := Matrix(true).Set("*/*", to, false)
	for _, f := range from {
		r.Set(f, to, true)
	}
	return r
}

// Relabeling gives pod NS/Name new labels.
type Relabeling struct {
	NS, Name string
	Labels   map[string]string
}

// Restore is the relabeling a test applies after every case it does not keep: the one
// case relabelling its target x/a leaves it pod=a again.
var Restore = Relabeling{"x", "a", map[string]string{"pod": "a"}}

// Case applies Policies (creating them, or updating those of the same name kept from the
// previous case) after Relabel, then expects a matrix on each probe of Expect.
type Case struct {
	Name     string
	Policies []*networkingv1.NetworkPolicy
	// AdminPolicies and Baseline are created after Policies (the admin cases' only).
	AdminPolicies []*anpv1alpha1.AdminNetworkPolicy
	Baseline      *anpv1alpha1.BaselineAdminNetworkPolicy
	Relabel       *Relabeling
	// AcceptFirstInForward: before the policies, an ACCEPT of everything is inserted first in
	// the FORWARD chain of the nodes (a service proxy restarting after minilet); the next
	// sync must move the policy jumps back on top.
	AcceptFirstInForward bool
	// CheckNodeAndDrops: the node itself still reaches x/a, and x/a's denied ingress is
	// counted on its DROP rule.
	CheckNodeAndDrops bool
	Expect            map[Probe]Reachability
	// Keep leaves the policies and labels for the next case (an update of them); otherwise
	// the test deletes every policy and applies Restore.
	Keep bool
}

// Policy makers, as the e2e writes its cases.

// Sel selects by labels given as key, value, key, value...
func Sel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

// Policy is ns/name selecting target for types, with no rules.
func Policy(ns, name string, target *metav1.LabelSelector, types ...networkingv1.PolicyType) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: *target, PolicyTypes: types}}
}

func WithIngress(np *networkingv1.NetworkPolicy, rules ...networkingv1.NetworkPolicyIngressRule) *networkingv1.NetworkPolicy {
	np.Spec.Ingress = rules
	return np
}

func WithEgress(np *networkingv1.NetworkPolicy, rules ...networkingv1.NetworkPolicyEgressRule) *networkingv1.NetworkPolicy {
	np.Spec.Egress = rules
	return np
}

// Port is a policy port, with an endPort if end is given.
func Port(proto corev1.Protocol, p intstr.IntOrString, end ...int32) networkingv1.NetworkPolicyPort {
	np := networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &p}
	if len(end) > 0 {
		np.EndPort = &end[0]
	}
	return np
}

const (
	Ingress = networkingv1.PolicyTypeIngress
	Egress  = networkingv1.PolicyTypeEgress
)

// Cases are the netpol e2e's cases, in order (some keep the previous case's policies).
// podCIDR holds every pod's address; ip gives a pod's address by key, for the ipBlock cases.
func Cases(podCIDR string, ip func(key string) string) []Case {
	xa := Sel("pod", "a")
	tcp, udp, sctp := corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP
	onlyTCP80 := func(r Reachability) map[Probe]Reachability { return map[Probe]Reachability{TCP80: r} }
	return []Case{
		{Name: "no policy", Expect: map[Probe]Reachability{TCP80: Matrix(true), UDP81: Matrix(true)}},
		{Name: "default deny ingress in x",
			Policies:          []*networkingv1.NetworkPolicy{Policy("x", "deny", Sel(), Ingress)},
			Expect:            map[Probe]Reachability{TCP80: only("x/*"), UDP80: only("x/*")},
			CheckNodeAndDrops: true},
		{Name: "default deny egress in x",
			Policies: []*networkingv1.NetworkPolicy{Policy("x", "deny", Sel(), Egress)},
			Expect:   onlyTCP80(Matrix(true).Set("x/*", "*/*", false))},
		{Name: "deny all and allow all ingress: the union allows",
			Policies: []*networkingv1.NetworkPolicy{Policy("x", "deny", Sel(), Ingress),
				WithIngress(Policy("x", "allow", Sel(), Ingress), networkingv1.NetworkPolicyIngressRule{})},
			Expect: onlyTCP80(Matrix(true))},
		{Name: "ingress from a podSelector",
			Policies: []*networkingv1.NetworkPolicy{WithIngress(Policy("x", "from-b", xa, Ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: Sel("pod", "b")}}})},
			Expect: onlyTCP80(only("x/a", "x/b")), Keep: true},
		{Name: "policy update: another podSelector",
			Policies: []*networkingv1.NetworkPolicy{WithIngress(Policy("x", "from-b", xa, Ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: Sel("pod", "c")}}})},
			Expect: onlyTCP80(only("x/a", "x/c")), Keep: true},
		{Name: "peer label change: x/b labelled pod=c",
			Relabel: &Relabeling{"x", "b", map[string]string{"pod": "c"}},
			Expect:  onlyTCP80(only("x/a", "x/c", "x/b")), Keep: true},
		{Name: "peer label change back",
			Relabel: &Relabeling{"x", "b", map[string]string{"pod": "b"}},
			Expect:  onlyTCP80(only("x/a", "x/c"))},
		{Name: "ingress from a namespaceSelector",
			Policies: []*networkingv1.NetworkPolicy{WithIngress(Policy("x", "from-y", xa, Ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: Sel("ns", "y")}}})},
			Expect: onlyTCP80(only("x/a", "y/*"))},
		{Name: "ingress from namespaceSelector and podSelector in one peer",
			Policies: []*networkingv1.NetworkPolicy{WithIngress(Policy("x", "from-yc", xa, Ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: Sel("ns", "y"), PodSelector: Sel("pod", "c")}}})},
			Expect: onlyTCP80(only("x/a", "y/c"))},
		{Name: "ingress from namespaceSelector or podSelector (two peers)",
			Policies: []*networkingv1.NetworkPolicy{WithIngress(Policy("x", "from-y-or-c", xa, Ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: Sel("ns", "y")}, {PodSelector: Sel("pod", "c")}}})},
			Expect: onlyTCP80(only("x/a", "y/*", "x/c"))},
		{Name: "ingress from namespaces by matchExpressions",
			Policies: []*networkingv1.NetworkPolicy{WithIngress(Policy("x", "not-x", xa, Ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "ns", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}}}}}}})},
			Expect: onlyTCP80(only("x/a", "y/*", "z/*"))},
		{Name: "ingress on TCP 81 (and SCTP 80) only",
			Policies: []*networkingv1.NetworkPolicy{WithIngress(Policy("x", "tcp81", xa, Ingress),
				networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{Port(tcp, intstr.FromInt32(81)), Port(sctp, intstr.FromInt32(80))}})},
			Expect: map[Probe]Reachability{TCP80: only("x/a"), TCP81: Matrix(true), UDP81: only("x/a")}},
		{Name: "ingress on a named port",
			Policies: []*networkingv1.NetworkPolicy{WithIngress(Policy("x", "named", xa, Ingress),
				networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{Port(tcp, intstr.FromString(TCP81.PortName()))}})},
			Expect: map[Probe]Reachability{TCP80: only("x/a"), TCP81: Matrix(true)}},
		{Name: "ingress on a named UDP port from namespace y",
			Policies: []*networkingv1.NetworkPolicy{WithIngress(Policy("x", "named-udp", xa, Ingress),
				networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{Port(udp, intstr.FromString(UDP80.PortName()))},
					From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: Sel("ns", "y")}}})},
			Expect: map[Probe]Reachability{UDP80: only("x/a", "y/*"), UDP81: only("x/a"), TCP80: only("x/a")}},
		{Name: "ingress on a port range (endPort)",
			Policies: []*networkingv1.NetworkPolicy{WithIngress(Policy("x", "range", xa, Ingress),
				networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{Port(tcp, intstr.FromInt32(79), 81)}})},
			Expect: map[Probe]Reachability{TCP80: Matrix(true), TCP81: Matrix(true), UDP80: only("x/a")}},
		{Name: "ingress from an ipBlock with except",
			Policies: []*networkingv1.NetworkPolicy{WithIngress(Policy("x", "cidr", xa, Ingress),
				networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: podCIDR, Except: []string{ip("y/b") + "/32"}}}}})},
			Expect: onlyTCP80(Matrix(true).Set("y/b", "x/a", false))},
		{Name: "egress to a namespaceSelector",
			Policies: []*networkingv1.NetworkPolicy{WithEgress(Policy("x", "to-y", xa, Egress),
				networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: Sel("ns", "y")}}})},
			Expect: onlyTCP80(Matrix(true).Set("x/a", "*/*", false).Set("x/a", "y/*", true))},
		{Name: "egress to 0.0.0.0/0 except one pod (and an IPv6 block, ignored)",
			Policies: []*networkingv1.NetworkPolicy{WithEgress(Policy("x", "to-cidr", xa, Egress),
				networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{ip("z/c") + "/32"}}}, {IPBlock: &networkingv1.IPBlock{CIDR: "fd00::/8"}}}})},
			Expect: onlyTCP80(Matrix(true).Set("x/a", "z/c", false))},
		{Name: "egress to a named port of any pod",
			Policies: []*networkingv1.NetworkPolicy{WithEgress(Policy("x", "to-named", xa, Egress),
				networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{Port(tcp, intstr.FromString(TCP81.PortName()))}})},
			Expect: map[Probe]Reachability{TCP80: Matrix(true).Set("x/a", "*/*", false), TCP81: Matrix(true)}},
		{Name: "egress on UDP 80 only: replies pass",
			Policies: []*networkingv1.NetworkPolicy{WithEgress(Policy("x", "udp80", xa, Egress),
				networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{Port(udp, intstr.FromInt32(80))}})},
			Expect: map[Probe]Reachability{UDP80: Matrix(true), TCP80: Matrix(true).Set("x/a", "*/*", false)}},
		{Name: "deny all both ways for x/a",
			Policies: []*networkingv1.NetworkPolicy{Policy("x", "isolate", xa, Ingress, Egress)},
			Expect:   onlyTCP80(Matrix(true).Set("x/a", "*/*", false).Set("*/*", "x/a", false))},
		{Name: "egress to y and ingress of y/a from x/b",
			Policies: []*networkingv1.NetworkPolicy{
				WithEgress(Policy("x", "to-y", Sel(), Egress), networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: Sel("ns", "y")}}}),
				WithIngress(Policy("y", "from-xb", xa, Ingress), networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: Sel("ns", "x"), PodSelector: Sel("pod", "b")}}}),
			},
			Expect: onlyTCP80(Matrix(true).Set("x/*", "*/*", false).Set("x/*", "y/*", true).Set("*/*", "y/a", false).Set("x/b", "y/a", true))},
		{Name: "an ACCEPT inserted above the jump in FORWARD does not bypass the policies",
			AcceptFirstInForward: true,
			Policies:             []*networkingv1.NetworkPolicy{Policy("x", "deny", Sel(), Ingress)},
			Expect:               onlyTCP80(only("x/*"))},
		{Name: "target label change: x/a no longer selected",
			Policies: []*networkingv1.NetworkPolicy{Policy("x", "deny-a", xa, Ingress)},
			Relabel:  &Relabeling{"x", "a", map[string]string{"pod": "renamed"}},
			Expect:   onlyTCP80(Matrix(true))},
	}
}
