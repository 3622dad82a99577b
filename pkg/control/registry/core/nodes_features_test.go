package core

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A node's declared features are checked on create and on a status write, as
// kube-apiserver v1.36.3 checks them (its answers to the same requests): UpperCamelCase
// names, each once, sorted.
func TestNodeDeclaredFeatures(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{DeclaredFeatures: []string{"B", "A"}}}
	registrytest.ExpectMessages(t, "create", registrytest.CreateSteps(NodeRules, node),
		`status.declaredFeatures[1]: Invalid value: "A": list must be sorted alphabetically`)

	old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	node = old.DeepCopy()
	node.Status.DeclaredFeatures = []string{"Bad Feature", "Zed", "Alpha", "Alpha", "a/b"}
	registrytest.ExpectMessages(t, "status", NodeRules.SubresourceUpdates["status"].Validate(node, old),
		`status.declaredFeatures[0]: Invalid value: "Bad Feature": invalid feature name "Bad Feature": must start with an UpperCamelCase segment, with subsequent segments separated by '/' (e.g., MyFeature or MyFeature/mySubFeature), and contain only alphanumeric characters and slashes`,
		`status.declaredFeatures[2]: Invalid value: "Alpha": list must be sorted alphabetically`,
		`status.declaredFeatures[3]: Duplicate value: "Alpha"`,
		`status.declaredFeatures[4]: Invalid value: "a/b": invalid feature name "a/b": must start with an UpperCamelCase segment, with subsequent segments separated by '/' (e.g., MyFeature or MyFeature/mySubFeature), and contain only alphanumeric characters and slashes`)
	node.Status.DeclaredFeatures = []string{"Alpha", "Good/sub", "Zed"}
	registrytest.ExpectMessages(t, "sorted, valid", NodeRules.SubresourceUpdates["status"].Validate(node, old))
}
