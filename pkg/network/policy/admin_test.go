package policy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/policy/admincrd"
	"github.com/minik8s/minik8s/pkg/network/policy/policytest"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	crdclientv1 "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
	anpclient "sigs.k8s.io/network-policy-api/pkg/client/clientset/versioned"
	anpinformers "sigs.k8s.io/network-policy-api/pkg/client/informers/externalversions"
	"sigs.k8s.io/yaml"
)

// adminCases are the admin tiers' cases with this test's pod addresses.
func adminCases() []policytest.Case {
	ips := map[string]string{}
	for _, p := range matrixPods() {
		ips[p.key()] = p.ip
	}
	return policytest.AdminCases(func(key string) string { return ips[key] })
}

// TestAdminConnectivityMatrix runs the admin tiers' cases against the controller on a real
// miniapi serving the CRDs of package admincrd, writing real rules in the node namespace.
func TestAdminConnectivityMatrix(t *testing.T) {
	mn := newMatrixNet(t)
	c := newCluster(t, mn)
	anps := anpClient(t, t.Context(), c.config, admincrd.Install)
	ctx := startController(t, mn, c, func(ctrl *Controller, core informers.SharedInformerFactory) {
		ctrl.WithAdminPolicies(anpinformers.NewSharedInformerFactory(anps, 0), core)
	})
	admin := anps.PolicyV1alpha1()
	for _, tc := range adminCases() {
		t.Run(tc.Name, func(t *testing.T) {
			for _, np := range tc.Policies {
				if _, err := c.client.NetworkingV1().NetworkPolicies(np.Namespace).Create(ctx, np, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for _, anp := range tc.AdminPolicies {
				if _, err := admin.AdminNetworkPolicies().Create(ctx, anp, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.Baseline != nil {
				if _, err := admin.BaselineAdminNetworkPolicies().Create(ctx, tc.Baseline, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			// Probe only once every policy is written: a matrix seen half way could match.
			var comments []string
			for _, np := range tc.Policies {
				comments = append(comments, `"`+np.Namespace+"/"+np.Name+" ")
			}
			for _, anp := range tc.AdminPolicies {
				comments = append(comments, `"anp/`+anp.Name+" ")
			}
			if tc.Baseline != nil {
				comments = append(comments, `"banp/`+tc.Baseline.Name+" ")
			}
			mn.waitRules(t, "every policy written", func(rules string) bool {
				for _, c := range comments {
					if !strings.Contains(rules, c) {
						return false
					}
				}
				return true
			})
			for pr, want := range tc.Expect {
				mn.expect(t, tc.Name, pr, want)
			}
			for _, ns := range policytest.Namespaces {
				if err := c.client.NetworkingV1().NetworkPolicies(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := admin.AdminNetworkPolicies().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := admin.BaselineAdminNetworkPolicies().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			// Back to no pod chain before the next case.
			mn.waitRules(t, "no pod chain left", func(rules string) bool { return !strings.Contains(rules, ":"+chainPrefix) })
			mn.expect(t, tc.Name+", all deleted", policytest.TCP80, policytest.Matrix(true))
		})
	}
}

// waitRules waits (10 s at most) until the node's filter table satisfies ok.
func (mn *matrixNet) waitRules(t *testing.T, what string, ok func(rules string) bool) {
	t.Helper()
	var rules []byte
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		err := network.InNetNS(mn.node, func() error {
			var err error
			rules, err = exec.Command("iptables-save", "-t", "filter").Output()
			return err
		})
		return err == nil && ok(string(rules)), err
	})
	if err != nil {
		t.Fatalf("%s: %v; the rules:\n%s", what, err, rules)
	}
}

// anpClient installs the admin CRDs with install and waits until their resources are served.
func anpClient(t *testing.T, ctx context.Context, cfg *rest.Config, install func(context.Context, crdclientv1.CustomResourceDefinitionsGetter) error) *anpclient.Clientset {
	t.Helper()
	crds, err := crdclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := install(ctx, crds.ApiextensionsV1()); err != nil {
		t.Fatal(err)
	}
	anps, err := anpclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err1 := anps.PolicyV1alpha1().AdminNetworkPolicies().List(ctx, metav1.ListOptions{})
		_, err2 := anps.PolicyV1alpha1().BaselineAdminNetworkPolicies().List(ctx, metav1.ListOptions{})
		return err1 == nil && err2 == nil, nil
	})
	if err != nil {
		t.Fatalf("admin network policies not served: %v", err)
	}
	return anps
}

// TestAdminVerdictsMatchMatrix: for every admin case, the verdicts Decide gives are the
// matrix TestAdminConnectivityMatrix expects of the kernel.
func TestAdminVerdictsMatchMatrix(t *testing.T) {
	testPods := matrixPods()
	state, pods := matrixState(testPods)
	for _, tc := range adminCases() {
		state.Policies, state.AdminPolicies, state.Baseline = tc.Policies, tc.AdminPolicies, tc.Baseline
		checkDecisions(t, &state, testPods, pods, tc.Name, tc.Expect)
	}
}

// TestAdminVerdictNamesTheRule: a verdict names the ANP rule that denied, the Pass that
// handed over and the NetworkPolicy rule that then allowed, at the chain and index written.
func TestAdminVerdictNamesTheRule(t *testing.T) {
	xa := statePod("x", "a", "node1", "10.0.0.1", map[string]string{"pod": "a"})
	yb := statePod("y", "b", "node2", "10.0.0.2", map[string]string{"pod": "b"})
	zc := statePod("z", "c", "node2", "10.0.0.3", map[string]string{"pod": "c"})
	tcp := corev1.ProtocolTCP
	anp := policytest.ANP("guard-x", 7, sel("ns", "x"))
	anp.Spec.Ingress = []anpv1alpha1.AdminNetworkPolicyIngressRule{
		policytest.FromNamespaces(anpv1alpha1.AdminNetworkPolicyRuleActionPass, sel("ns", "y")),
		policytest.FromNamespaces(anpv1alpha1.AdminNetworkPolicyRuleActionDeny, sel("ns", "z")),
	}
	anp.Spec.Ingress[1].Name = "no-z"
	s := &State{Node: "node1", Pods: []*corev1.Pod{xa, yb, zc}, Namespaces: matrixNamespaces(),
		Policies: []*networkingv1.NetworkPolicy{withIngress(policy("x", "from-y", sel("pod", "a"), ingress), networkingv1.NetworkPolicyIngressRule{
			From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("ns", "y")}},
			Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromInt32(80))}})},
		AdminPolicies: []*anpv1alpha1.AdminNetworkPolicy{anp}}
	chains := map[string][]string{}
	for _, c := range Build(s).Chains {
		chains[c.Name] = c.Rules
	}
	at := func(v Verdict) string {
		if r := chains[v.Chain]; v.Index < len(r) {
			return r[v.Index]
		}
		return ""
	}
	v := Decide(s, xa, ingress, Connection{Src: zc.Status.PodIP, Dst: xa.Status.PodIP, Protocol: tcp, Port: 80, SrcName: "z/c"})
	want := `denied by AdminNetworkPolicy anp/guard-x ingress rule 1 (priority 7) "no-z" Deny (from NamespaceSelector: ns=z, on any port)`
	if v.Allowed || v.By == nil || v.By.Kind != "AdminNetworkPolicy" || v.Reason != want || v.Chain != ChainName(xa, ingress) || at(v) != v.Rule || !strings.Contains(v.Rule, "-j DROP") {
		t.Errorf("z/c -> x/a: %+v, want %q", v, want)
	}
	v = Decide(s, xa, ingress, Connection{Src: yb.Status.PodIP, Dst: xa.Status.PodIP, Protocol: tcp, Port: 80, SrcName: "y/b"})
	want = `allowed by x/from-y ingress rule 0 (from NamespaceSelector: ns=y, on TCP 80), after AdminNetworkPolicy anp/guard-x ingress rule 0 (priority 7) Pass (from NamespaceSelector: ns=y, on any port)`
	if !v.Allowed || v.By == nil || v.By.Policy != "x/from-y" || v.Reason != want || v.Chain != tierChainName(xa, ingress) || at(v) != v.Rule ||
		strings.Join(v.AdminBy, ",") != "anp/guard-x" {
		t.Errorf("y/b -> x/a: %+v, want %q", v, want)
	}
	v = Decide(s, xa, ingress, Connection{Src: yb.Status.PodIP, Dst: xa.Status.PodIP, Protocol: tcp, Port: 81, SrcName: "y/b"})
	if v.Allowed || v.By != nil || !strings.HasPrefix(v.Reason, "denied: no policy selecting x/a allows") || at(v) != v.Rule {
		t.Errorf("y/b -> x/a:81: %+v, want the NetworkPolicy tier's DROP", v)
	}
}

// installExperimental installs the experimental channel's admin CRDs (testdata, from
// network-policy-api v0.1.7), whose egress peers have nodes and domainNames, as a user
// applies them over the standard ones miniapi installs (and then leaves).
func installExperimental(ctx context.Context, client crdclientv1.CustomResourceDefinitionsGetter) error {
	files, err := filepath.Glob("testdata/experimental/*.yaml")
	if err != nil || len(files) != 2 {
		return fmt.Errorf("experimental CRDs: %v %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		old, err := client.CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		crd.ResourceVersion = old.ResourceVersion
		if _, err := client.CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// TestAdminEgressToNodes: an ANP denying x's egress to the nodes labelled role=infra stops
// x/a reaching node2's InternalIP (a namespace on the bridge, as another node is), while
// y/b still reaches node2 and x/a still reaches the pods; node2 relabelled, x/a reaches it
// again, and back, not; the ANP's domainNames peer is reported in its status.
func TestAdminEgressToNodes(t *testing.T) {
	mn := newMatrixNet(t)
	node2 := &testPod{ns: "node", name: "2", ip: "10.78.0.2"}
	mn.attach(t, node2)
	c := newCluster(t, mn)
	ctx := t.Context()
	for _, n := range []struct{ name, ip, role string }{{"node1", "10.78.0.1", "worker"}, {"node2", node2.ip, "infra"}} {
		created, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"role": n.role}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip}, {Type: corev1.NodeHostName, Address: n.name}}
		if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	anps := anpClient(t, ctx, c.config, installExperimental)
	startController(t, mn, c, func(ctrl *Controller, core informers.SharedInformerFactory) {
		ctrl.WithAdminPolicies(anpinformers.NewSharedInformerFactory(anps, 0), core)
		ctrl.admin.Status = anps.PolicyV1alpha1().AdminNetworkPolicies()
	})
	pod := map[string]*testPod{}
	for _, p := range mn.pods {
		pod[p.key()] = p
	}
	// reaches polls until from reaching to on TCP 80 is want.
	reaches := func(what string, from, to *testPod, want bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return connect(from.netns, to, policytest.TCP80) == want, nil
		})
		if err != nil {
			t.Errorf("%s: %s reaching %s is not %v", what, from.key(), to.key(), want)
		}
	}
	reaches("no policy", pod["x/a"], node2, true)

	anp := policytest.ANP("no-infra", 5, sel("ns", "x"))
	anp.Spec.Egress = []anpv1alpha1.AdminNetworkPolicyEgressRule{
		{Name: "k8s-io", Action: anpv1alpha1.AdminNetworkPolicyRuleActionAllow,
			To: []anpv1alpha1.AdminNetworkPolicyEgressPeer{{DomainNames: []anpv1alpha1.DomainName{"kubernetes.io"}}}},
		{Name: "infra", Action: anpv1alpha1.AdminNetworkPolicyRuleActionDeny,
			To: []anpv1alpha1.AdminNetworkPolicyEgressPeer{{Nodes: sel("role", "infra")}}},
	}
	createWhenServed(t, ctx, anps, anp)
	reaches("ANP denying x egress to role=infra", pod["x/a"], node2, false)
	reaches("ANP denying x egress to role=infra", pod["y/b"], node2, true)
	reaches("ANP denying x egress to role=infra", pod["x/a"], pod["y/b"], true)
	reaches("ANP denying x egress to role=infra", pod["x/b"], pod["z/c"], true)

	relabelNode := func(role string) {
		t.Helper()
		patch := []byte(`{"metadata":{"labels":{"role":"` + role + `"}}}`)
		if _, err := c.client.CoreV1().Nodes().Patch(ctx, "node2", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	relabelNode("worker")
	reaches("node2 relabelled role=worker", pod["x/a"], node2, true)
	relabelNode("infra")
	reaches("node2 relabelled role=infra again", pod["x/a"], node2, false)

	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := anps.PolicyV1alpha1().AdminNetworkPolicies().Get(ctx, anp.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, ConditionDomainNames)
		return cond != nil && cond.Status == metav1.ConditionFalse, nil
	})
	if err != nil {
		t.Errorf("no %s=False condition on an ANP with domainNames: %v", ConditionDomainNames, err)
	}
	if err := anps.PolicyV1alpha1().AdminNetworkPolicies().Delete(ctx, anp.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reaches("ANP deleted", pod["x/a"], node2, true)
}

// createWhenServed creates anp, which has node peers: until the experimental schema is
// served, the standard one prunes the node peer and refuses the peer left empty.
func createWhenServed(t *testing.T, ctx context.Context, anps anpclient.Interface, anp *anpv1alpha1.AdminNetworkPolicy) {
	t.Helper()
	var createErr error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		_, createErr = anps.PolicyV1alpha1().AdminNetworkPolicies().Create(ctx, anp, metav1.CreateOptions{})
		return createErr == nil, nil
	}); err != nil {
		t.Fatalf("create %s: %v", anp.Name, createErr)
	}
}
