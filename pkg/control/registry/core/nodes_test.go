package core_test

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// TestNodeValidation: a Node is checked as kube-apiserver 1.36's ValidateNode and
// ValidateNodeUpdate check it: taints (reported under metadata.taints, as kube does),
// capacity, pod CIDRs that may only go from "" to valid, a providerID set once, distinct
// addresses; an update of /nodes/x keeps the status and /nodes/x/status keeps the spec;
// the retired spec.configSource is dropped unless the node had it.
func TestNodeValidation(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, nodes := context.Background(), c.Client.CoreV1().Nodes()
	name := c.Namespace + "-node" // unique per run of the shared server
	expectInvalid := func(what string, err error, want ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: accepted, want %q", what, want)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", what, err, w)
			}
		}
	}

	_, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name + "-bad"},
		Spec: corev1.NodeSpec{PodCIDRs: []string{"10.1.0.0/24", "10.2.0.0/24"}, Taints: []corev1.Taint{
			{Key: "bad key", Effect: corev1.TaintEffectNoSchedule},
			{Key: "dedicated", Value: "a", Effect: "Sometimes"},
			{Key: "gpu", Effect: corev1.TaintEffectNoSchedule},
			{Key: "gpu", Value: "other", Effect: corev1.TaintEffectNoSchedule},
		}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1500m"),
			corev1.ResourceCPU: resource.MustParse("-1")}}}, metav1.CreateOptions{})
	expectInvalid("bad node", err,
		`metadata.taints[0].key: Invalid value: "bad key": name part must consist of alphanumeric characters`,
		`metadata.taints[1].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
		`metadata.taints[3]: Duplicate value: {"Key":"gpu","Value":"other","Effect":"NoSchedule","TimeAdded":null}: taints must be unique by key and effect pair`,
		`status.capacity.pods: Invalid value: "1500m": must be an integer`,
		`status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0`,
		`spec.podCIDRs: Invalid value: ["10.1.0.0/24","10.2.0.0/24"]: may specify no more than one CIDR for each IP family`)

	node, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:   corev1.NodeSpec{ConfigSource: &corev1.NodeConfigSource{}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.9"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Spec.ConfigSource != nil || len(node.Status.Addresses) != 1 {
		t.Errorf("create keeps the status and drops spec.configSource: %+v", node)
	}

	// The shared server's controllers write the new node meanwhile (its not-ready taint
	// taken away, a pod CIDR from nodeipam: the same move from "" to valid, through the same
	// validation; the ttl annotation): each update is made on the latest node, again on a
	// conflict.
	update := func(change func(n *corev1.Node)) (*corev1.Node, error) {
		var out *corev1.Node
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := nodes.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(cur)
			out, err = nodes.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		return out, err
	}
	// From "" to a CIDR is allowed (the podCIDR alone gives podCIDRs), then never changed.
	podCIDR := "10.99.1.0/24"
	node, err = update(func(n *corev1.Node) {
		if n.Spec.PodCIDR == "" {
			n.Spec.PodCIDR = podCIDR
		}
		podCIDR = n.Spec.PodCIDR
		n.Status.Addresses = nil // an update of the node keeps the status
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(node.Spec.PodCIDRs) != 1 || node.Spec.PodCIDRs[0] != podCIDR || podCIDR == "" || len(node.Status.Addresses) != 1 {
		t.Errorf("podCIDR set, podCIDRs from it, status kept: %+v %+v", node.Spec, node.Status)
	}
	_, err = update(func(n *corev1.Node) {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.99.2.0/24", nil
		n.Spec.ProviderID = "minik8s://" + name
	})
	expectInvalid("podCIDR changed", err, `spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid`)

	if _, err = update(func(n *corev1.Node) { n.Spec.ProviderID = "minik8s://" + name }); err != nil {
		t.Fatal(err)
	}
	_, err = update(func(n *corev1.Node) { n.Spec.ProviderID = "other://" + name })
	expectInvalid("providerID changed", err, `spec.providerID: Forbidden: node updates may not change providerID except from "" to valid`)

	// The status subresource checks the status and keeps the spec.
	patch := `{"spec":{"unschedulable":true},"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.9"},{"type":"InternalIP","address":"10.0.0.9"}]}}`
	_, err = nodes.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	expectInvalid("duplicate address", err, `status.addresses[1]: Duplicate value: {"Type":"InternalIP","Address":"10.0.0.9"}`)
	patch = `{"spec":{"unschedulable":true},"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.10"}]}}`
	if node, err = nodes.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	if node.Spec.Unschedulable || node.Status.Addresses[0].Address != "10.0.0.10" {
		t.Errorf("status update takes the status and keeps the spec: %+v %+v", node.Spec, node.Status)
	}
	if err := nodes.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
