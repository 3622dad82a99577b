package policy

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/network/policy/policytest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
)

// TestAdminNamedPortsTakeThePodsProtocol: an admin policy's named port, which names no
// protocol, is each pod's container port of that name with that port's own protocol, on
// ingress (the subject pod's port) and egress (the peer pods' ports); the kernel and Decide
// agree. The standard-channel definitions miniapi installs have no namedPort (the
// experimental ones a user may apply instead do), so the rules are written from a State
// rather than through the API.
func TestAdminNamedPortsTakeThePodsProtocol(t *testing.T) {
	deny := anpv1alpha1.AdminNetworkPolicyRuleActionDeny
	in := policytest.ANP("named-udp-in", 10, sel("ns", "x"))
	in.Spec.Ingress = []anpv1alpha1.AdminNetworkPolicyIngressRule{policytest.FromNamespaces(deny, sel(),
		anpv1alpha1.AdminNetworkPolicyPort{NamedPort: ptr.To(policytest.UDP81.PortName())})}
	out := &anpv1alpha1.AdminNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "named-udp-out"},
		Spec: anpv1alpha1.AdminNetworkPolicySpec{Priority: 11,
			Subject: anpv1alpha1.AdminNetworkPolicySubject{Pods: &anpv1alpha1.NamespacedPod{NamespaceSelector: *sel("ns", "y"), PodSelector: *sel("pod", "b")}},
			Egress: []anpv1alpha1.AdminNetworkPolicyEgressRule{{Action: deny, To: []anpv1alpha1.AdminNetworkPolicyEgressPeer{{Namespaces: sel("ns", "z")}},
				Ports: &[]anpv1alpha1.AdminNetworkPolicyPort{{NamedPort: ptr.To(policytest.UDP80.PortName())}}}}}}
	expect := map[policytest.Probe]policytest.Reachability{
		policytest.TCP80: policytest.Matrix(true),
		policytest.TCP81: policytest.Matrix(true),
		policytest.UDP80: policytest.Matrix(true).Set("y/b", "z/*", false),
		policytest.UDP81: policytest.Matrix(true).Set("*/*", "x/*", false),
	}

	testPods := matrixPods()
	matrix, pods := matrixState(testPods)
	state := &matrix
	state.AdminPolicies = []*anpv1alpha1.AdminNetworkPolicy{in, out}
	checkDecisions(t, state, testPods, pods, "named ports", expect)

	mn := newMatrixNet(t)
	t.Cleanup(func() { cleanedUp(t, mn) })
	ctrl := &Controller{node: "node1", NetNS: mn.node}
	err := ctrl.inNetNS(func() error {
		_, err := ctrl.write(context.Background(), Build(state))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for pr, want := range expect {
		mn.expect(t, "named ports", pr, want)
	}
}
