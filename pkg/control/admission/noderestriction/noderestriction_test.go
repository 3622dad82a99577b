package noderestriction

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

var (
	podsGVR  = corev1.SchemeGroupVersion.WithResource("pods")
	nodesGVR = corev1.SchemeGroupVersion.WithResource("nodes")
	node1    = authn.User{Name: "system:node:node-1", Groups: []string{"system:nodes", "system:authenticated"}}
)

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func pod(name, nodeName string, mirror bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c"}}}}
	if mirror {
		p.Annotations = map[string]string{mirrorPod: "hash"}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "uid-node-1", Controller: ptr.To(true)}}
	}
	return p
}

func TestNodeWrites(t *testing.T) {
	p := New(fake.NewClientset(node("node-1", nil), pod("theirs", "node-2", false)))
	relabelled := pod("mine", "node-1", false)
	relabelled.Labels = map[string]string{"app": "y"}
	withSA := pod("m", "node-1", true)
	withSA.Spec.ServiceAccountName = "default"
	badUID := pod("m", "node-1", true)
	badUID.OwnerReferences[0].UID = "other"
	for _, tc := range []struct {
		name     string
		op       generic.Operation
		gvr      string
		sub      string
		obj, old runtime.Object
		want     string // "" when allowed
	}{
		{"mirror pod of itself", generic.Create, "pods", "", pod("m", "node-1", true), nil, ""},
		{"ordinary pod", generic.Create, "pods", "", pod("o", "node-1", false), nil,
			`pods "o" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "node-1" can only create mirror pods`},
		{"mirror pod elsewhere", generic.Create, "pods", "", pod("m", "node-2", true), nil, `node "node-1" can only create pods with spec.nodeName set to itself`},
		{"mirror pod with an account", generic.Create, "pods", "", withSA, nil, `node "node-1" can not create pods that reference a service account`},
		{"mirror pod of another Node object", generic.Create, "pods", "", badUID, nil, `node node-1 UID mismatch: expected other got uid-node-1`},
		{"delete own pod", generic.Delete, "pods", "", nil, pod("mine", "node-1", false), ""},
		{"delete another node's pod", generic.Delete, "pods", "", nil, pod("theirs", "node-2", false), `node "node-1" can only delete pods with spec.nodeName set to itself`},
		{"update a pod", generic.Update, "pods", "", pod("mine", "node-1", false), pod("mine", "node-1", false), `unexpected operation "UPDATE", node "node-1" can only create and delete mirror pods`},
		{"own pod status", generic.Update, "pods", "status", pod("mine", "node-1", false), pod("mine", "node-1", false), ""},
		{"other pod status", generic.Update, "pods", "status", pod("theirs", "node-2", false), pod("theirs", "node-2", false), `node "node-1" can only update pod status for pods with spec.nodeName set to itself`},
		{"labels through status", generic.Update, "pods", "status", relabelled, pod("mine", "node-1", false), `node "node-1" cannot update labels through pod status`},
		{"evict another node's pod", generic.Create, "pods", "eviction", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "ns"}}, nil, `node node-1 can only evict pods with spec.nodeName set to itself`},
		{"create itself", generic.Create, "nodes", "", node("node-1", map[string]string{"kubernetes.io/hostname": "node-1", "example.com/team": "a"}), nil, ""},
		{"create another node", generic.Create, "nodes", "", node("node-2", nil), nil, `nodes "node-2" is forbidden: node "node-1" is not allowed to modify node "node-2"`},
		{"register with a restricted label", generic.Create, "nodes", "", node("node-1", map[string]string{"node-restriction.kubernetes.io/trusted": "y"}), nil,
			`node "node-1" is not allowed to set the following labels: node-restriction.kubernetes.io/trusted`},
		{"give itself a role", generic.Update, "nodes", "", node("node-1", map[string]string{"node-role.kubernetes.io/control-plane": ""}), node("node-1", nil),
			`is not allowed to modify labels: node-role.kubernetes.io/control-plane`},
		{"zone label", generic.Update, "nodes", "", node("node-1", map[string]string{"topology.kubernetes.io/zone": "a"}), node("node-1", nil), ""},
		{"drop its taint", generic.Update, "nodes", "", node("node-1", nil), node("node-1", nil, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}),
			`node "node-1" is not allowed to modify taints`},
		{"its status", generic.Update, "nodes", "status", node("node-1", nil), node("node-1", nil), ""},
	} {
		a := admissiontest.Attrs(t, tc.op, corev1.SchemeGroupVersion.WithResource(tc.gvr), tc.sub, tc.obj, tc.old)
		err := p.Admit(authn.WithUser(context.Background(), node1), a)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func lease(ns, name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name)}}
}

// TestNodeLeases: a node writes only its own Lease in kube-node-lease; the Node authorizer
// cannot refuse a create of another name (the name is in the body, not the path).
func TestNodeLeases(t *testing.T) {
	p := New(fake.NewClientset())
	const other = "can only access node lease with the same name as the requesting node"
	for _, tc := range []struct {
		name     string
		op       generic.Operation
		obj, old runtime.Object
		want     string
	}{
		{"create its own", generic.Create, lease(corev1.NamespaceNodeLease, "node-1"), nil, ""},
		{"renew its own", generic.Update, lease(corev1.NamespaceNodeLease, "node-1"), lease(corev1.NamespaceNodeLease, "node-1"), ""},
		{"create another node's", generic.Create, lease(corev1.NamespaceNodeLease, "node-c"), nil, `leases.coordination.k8s.io "node-c" is forbidden: ` + other},
		{"renew another node's", generic.Update, lease(corev1.NamespaceNodeLease, "node-c"), lease(corev1.NamespaceNodeLease, "node-c"), other},
		{"delete another node's", generic.Delete, nil, lease(corev1.NamespaceNodeLease, "node-c"), other},
		{"a lease elsewhere", generic.Create, lease("kube-system", "node-1"), nil, `can only access leases in the "kube-node-lease" system namespace`},
	} {
		a := admissiontest.Attrs(t, tc.op, coordinationv1.SchemeGroupVersion.WithResource("leases"), "", tc.obj, tc.old)
		err := p.Admit(authn.WithUser(context.Background(), node1), a)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestOtherUsersPass(t *testing.T) {
	p := New(fake.NewClientset())
	for _, u := range []authn.User{{Name: "admin", Groups: []string{"system:masters"}}, {Name: "system:node:node-1"} /* not in system:nodes */} {
		a := admissiontest.Attrs(t, generic.Create, podsGVR, "", pod("o", "node-2", false), nil)
		if err := p.Admit(authn.WithUser(context.Background(), u), a); err != nil {
			t.Errorf("%s: %v", u.Name, err)
		}
	}
	a := admissiontest.Attrs(t, generic.Create, nodesGVR, "", node("x", nil), nil)
	if err := p.Admit(authn.WithUser(context.Background(), authn.User{Name: "system:node:", Groups: []string{"system:nodes"}}), a); err == nil ||
		!strings.Contains(err.Error(), `could not determine node from user "system:node:"`) {
		t.Errorf("nameless node: %v", err)
	}
}
