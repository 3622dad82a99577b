package explain

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	"github.com/minik8s/minik8s/pkg/network/policy"
	"github.com/minik8s/minik8s/pkg/network/policy/policytest"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
	anpclient "sigs.k8s.io/network-policy-api/pkg/client/clientset/versioned"
)

// TestAdminTiersFromTheAPI: explain reads the AdminNetworkPolicies and the
// BaselineAdminNetworkPolicy from a real miniapi and names the tier, the policy (an ANP
// with its priority) and the rule that decided: an ANP Deny over an allowing NetworkPolicy,
// an ANP Pass to that NetworkPolicy, and the BANP's Deny for a pod no NetworkPolicy isolates.
func TestAdminTiersFromTheAPI(t *testing.T) {
	api := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"serviceaccount"} })
	ctx := context.Background()
	admin, err := anpclient.NewForConfig(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	// miniapi installs the admin policies' definitions as it starts; wait until they are served.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err1 := admin.PolicyV1alpha1().AdminNetworkPolicies().List(ctx, metav1.ListOptions{})
		_, err2 := admin.PolicyV1alpha1().BaselineAdminNetworkPolicies().List(ctx, metav1.ListOptions{})
		return err1 == nil && err2 == nil, nil
	})
	if err != nil {
		t.Fatalf("admin network policies not served: %v", err)
	}
	for _, ns := range []string{"x", "y", "z"} {
		api.CreateNamespace(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"ns": ns}}})
	}
	for key, ip := range map[string]string{"x/a": "10.244.1.2", "y/b": "10.244.1.3", "z/c": "10.244.1.4"} {
		ns, name, _ := strings.Cut(key, "/")
		p, err := api.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "agnhost"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}
		if _, err := api.Client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	allowAll := policytest.WithIngress(policytest.Policy("x", "allow-all", policytest.Sel(), networkingv1.PolicyTypeIngress), networkingv1.NetworkPolicyIngressRule{})
	if _, err := api.Client.NetworkingV1().NetworkPolicies("x").Create(ctx, allowAll, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	guard := policytest.ANP("guard-x", 10, policytest.Sel("ns", "x"))
	guard.Spec.Ingress = []anpv1alpha1.AdminNetworkPolicyIngressRule{
		policytest.FromNamespaces(anpv1alpha1.AdminNetworkPolicyRuleActionDeny, policytest.Sel("ns", "y")),
		policytest.FromNamespaces(anpv1alpha1.AdminNetworkPolicyRuleActionPass, policytest.Sel("ns", "z")),
	}
	guard.Spec.Ingress[0].Name = "no-y"
	if _, err := admin.PolicyV1alpha1().AdminNetworkPolicies().Create(ctx, guard, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	baseline := policytest.Baseline(policytest.Sel("ns", "y"), anpv1alpha1.BaselineAdminNetworkPolicyIngressRule{
		Action: anpv1alpha1.BaselineAdminNetworkPolicyRuleActionDeny, From: []anpv1alpha1.AdminNetworkPolicyIngressPeer{{Namespaces: policytest.Sel()}}})
	if _, err := admin.PolicyV1alpha1().BaselineAdminNetworkPolicies().Create(ctx, baseline, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	client, err := NewClient(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	c, err := readCluster(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	// The client reads one object too: --to names a pod, and a missing one is neither.
	if kind, err := targetKind(ctx, client, "x/a"); kind != "pod" || err != nil {
		t.Fatalf("targetKind(x/a) = %q, %v; want pod", kind, err)
	}
	if _, err := targetKind(ctx, client, "x/missing"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("targetKind(x/missing): %v, want both not found", err)
	}
	// node-1's rules as the controller writes them from the same objects, each counted.
	state := c.state
	state.Node = "node-1"
	tables := countedRules(t, &state, "[3:180]")
	explain := func(from, to string) (Connection, string) {
		src, err := c.pod(from)
		if err != nil {
			t.Fatal(err)
		}
		dst, err := c.pod(to)
		if err != nil {
			t.Fatal(err)
		}
		conn := c.connection(tables, nil, src, src.Status.PodIP, dst.Status.PodIP, corev1.ProtocolTCP, 80)
		var text bytes.Buffer
		RenderConnection(&text, conn)
		return conn, text.String()
	}
	for _, tc := range []struct {
		from, to, tier string
		want           []string
	}{
		{"y/b", "x/a", policy.KindANP, []string{
			"ingress of x/a on node-1: isolated for ingress by x/allow-all; the admin policies anp/guard-x (priority 10)",
			`the AdminNetworkPolicy tier decided: denied by AdminNetworkPolicy anp/guard-x ingress rule 0 (priority 10) "no-y" Deny (from NamespaceSelector: ns=y, on any port)`,
			`"anp/guard-x ingress rule 0" -j DROP   <- decides`,
			"verdict: denied by the ingress policies of x/a: AdminNetworkPolicy anp/guard-x (priority 10)"}},
		{"z/c", "x/a", tierNetworkPolicy, []string{
			"the NetworkPolicy tier decided: allowed by x/allow-all ingress rule 0 (from any peer, on any port), after AdminNetworkPolicy anp/guard-x ingress rule 1 (priority 10) Pass (from NamespaceSelector: ns=z, on any port)",
			"verdict: allowed"}},
		{"x/a", "y/b", policy.KindBANP, []string{
			"ingress of y/b on node-1: isolated for ingress by the admin policies banp/default",
			"the BaselineAdminNetworkPolicy tier decided: denied by BaselineAdminNetworkPolicy banp/default ingress rule 0 Deny (from NamespaceSelector: <all>, on any port)",
			"verdict: denied by the ingress policies of y/b: BaselineAdminNetworkPolicy banp/default"}},
	} {
		conn, text := explain(tc.from, tc.to)
		if conn.Ingress == nil || conn.Ingress.Tier != tc.tier {
			t.Errorf("%s -> %s: ingress %+v, want decided by the %s tier", tc.from, tc.to, conn.Ingress, tc.tier)
		}
		for _, want := range tc.want {
			if !strings.Contains(text, want) {
				t.Errorf("%s -> %s: text lacks %q:\n%s", tc.from, tc.to, want, text)
			}
		}
	}
}
