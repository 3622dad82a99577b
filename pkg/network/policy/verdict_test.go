package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/network/policy/policytest"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestVerdictsMatchMatrix: for every case of TestConnectivityMatrix, the verdicts Decide
// gives (egress of the source and ingress of the destination) are the matrix that test
// expects, and so the matrix the kernel enforces there; policies kept and pods relabelled
// from case to case as that test does.
func TestVerdictsMatchMatrix(t *testing.T) {
	testPods := matrixPods()
	state, pods := matrixState(testPods)
	policies := map[string]*networkingv1.NetworkPolicy{}
	for _, tc := range matrixCases() {
		if r := tc.Relabel; r != nil {
			pods[r.NS+"/"+r.Name].Labels = r.Labels
		}
		for _, np := range tc.Policies {
			policies[np.Namespace+"/"+np.Name] = np
		}
		state.Policies = nil
		for _, np := range policies {
			state.Policies = append(state.Policies, np)
		}
		checkDecisions(t, &state, testPods, pods, tc.Name, tc.Expect)
		if !tc.Keep {
			policies = map[string]*networkingv1.NetworkPolicy{}
			pods[policytest.Restore.NS+"/"+policytest.Restore.Name].Labels = policytest.Restore.Labels
		}
	}
}

// matrixState is node1's view of the matrix pods (running, with their addresses), by key
// too, and of the namespaces labelled ns=NAME.
func matrixState(testPods []*testPod) (State, map[string]*corev1.Pod) {
	state := State{Node: "node1", Namespaces: matrixNamespaces()}
	pods := map[string]*corev1.Pod{}
	for _, p := range testPods {
		pod := p.apiPod()
		pod.UID, pod.Status = types.UID("uid-"+p.key()), p.status()
		pods[p.key()] = pod
		state.Pods = append(state.Pods, pod)
	}
	return state, pods
}

func matrixNamespaces() []*corev1.Namespace {
	var namespaces []*corev1.Namespace
	for _, ns := range policytest.Namespaces {
		namespaces = append(namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"ns": ns}}})
	}
	return namespaces
}

// TestVerdictNamesTheRule: the verdict names the isolating policies, the rule, peer and port
// that allowed, the chain and rule index the controller wrote, and the denial's policies.
func TestVerdictNamesTheRule(t *testing.T) {
	xa := statePod("x", "a", "node1", "10.0.0.1", map[string]string{"pod": "a"})
	xb := statePod("x", "b", "node2", "10.0.0.2", map[string]string{"pod": "b"})
	xc := statePod("x", "c", "node2", "10.0.0.3", map[string]string{"pod": "c"})
	tcp := corev1.ProtocolTCP
	s := &State{Node: "node1", Pods: []*corev1.Pod{xa, xb, xc}, Namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "x"}}},
		Policies: []*networkingv1.NetworkPolicy{
			policy("x", "deny-all", sel(), ingress),
			withIngress(policy("x", "allow-b", sel("pod", "a"), ingress), networkingv1.NetworkPolicyIngressRule{
				From:  []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "192.0.2.0/24"}}, {PodSelector: sel("pod", "b")}},
				Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromInt32(80))}}),
		}}
	v := Decide(s, xa, ingress, Connection{Src: xb.Status.PodIP, Dst: xa.Status.PodIP, Protocol: tcp, Port: 80, SrcName: "x/b"})
	if !v.Allowed || v.By == nil || v.By.Policy != "x/allow-b" || v.By.Rule != 0 || v.By.Peer != 1 || v.By.Port != 0 ||
		strings.Join(v.IsolatedBy, ",") != "x/allow-b,x/deny-all" || v.Chain != ChainName(xa, ingress) {
		t.Fatalf("x/b -> x/a:80: %+v (by %+v)", v, v.By)
	}
	// The rule named is the one at Index of the chain Build writes for x/a on its node.
	var chain []string
	for _, c := range Build(s).Chains {
		if c.Name == v.Chain {
			chain = c.Rules
		}
	}
	if v.Index >= len(chain) || chain[v.Index] != v.Rule || !strings.Contains(v.Rule, `"x/allow-b ingress rule 0"`) {
		t.Errorf("rule %d %q, chain %q", v.Index, v.Rule, chain)
	}
	if want := "allowed by x/allow-b ingress rule 0 (from PodSelector: pod=b, in the policy's namespace, on TCP 80)"; v.Reason != want {
		t.Errorf("reason %q, want %q", v.Reason, want)
	}
	v = Decide(s, xa, ingress, Connection{Src: xc.Status.PodIP, Dst: xa.Status.PodIP, Protocol: tcp, Port: 80, SrcName: "x/c"})
	if want := "denied: no policy selecting x/a allows ingress from x/c (10.0.0.3) on TCP 80 (policies: x/allow-b, x/deny-all)"; v.Allowed || v.Reason != want || v.Index != len(chain)-1 {
		t.Errorf("x/c -> x/a: %+v, want %q at the DROP", v, want)
	}
	v = Decide(s, xa, ingress, Connection{Src: "10.0.0.9", Dst: xa.Status.PodIP, Protocol: tcp, Port: 80, FromNode: true})
	if !v.Allowed || v.Index != 0 || v.By != nil {
		t.Errorf("from the node: %+v", v)
	}
	if v := Decide(s, xb, egress, Connection{Src: xb.Status.PodIP, Dst: xa.Status.PodIP, Protocol: tcp, Port: 80}); !v.Allowed || v.Chain != "" || len(v.IsolatedBy) != 0 {
		t.Errorf("egress of x/b: %+v, want not isolated", v)
	}
}

// checkDecisions holds Decide's verdict for every pair of test pods, on every probe of
// expect, against the reachability expected.
func checkDecisions(t *testing.T, state *State, testPods []*testPod, pods map[string]*corev1.Pod, name string, expect map[policytest.Probe]policytest.Reachability) {
	t.Helper()
	for pr, r := range expect {
		var diff []string
		for _, f := range testPods {
			for _, to := range testPods {
				if f == to {
					continue
				}
				c := Connection{Src: f.ip, Dst: to.ip, Protocol: pr.Proto, Port: int32(pr.Port), SrcName: f.key(), DstName: to.key()}
				eg := Decide(state, pods[f.key()], networkingv1.PolicyTypeEgress, c)
				in := Decide(state, pods[to.key()], networkingv1.PolicyTypeIngress, c)
				if got := eg.Allowed && in.Allowed; got != r[f.key()][to.key()] {
					diff = append(diff, fmt.Sprintf("%s -> %s: got %v (egress: %s; ingress: %s), want %v", f.key(), to.key(), got, eg.Reason, in.Reason, !got))
				}
			}
		}
		if len(diff) > 0 {
			t.Errorf("%s on %s: %d pairs differ:\n%s", name, pr, len(diff), strings.Join(diff, "\n"))
		}
	}
}
