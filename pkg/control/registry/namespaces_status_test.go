package registry_test

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestNamespaceStatusTakesMetadata: a patch of a namespace's status subresource changes its
// annotations too (kube's namespace status strategy keeps only the spec), while its spec
// stays; the namespaces conformance test patches both at once.
func TestNamespaceStatusTakesMetadata(t *testing.T) {
	c := controlplanetest.Start(t, nil)
	ctx, nss := context.Background(), c.Client.CoreV1().Namespaces()
	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := `{"metadata":{"annotations":{"patched":"yes"}},"spec":{"finalizers":[]},` +
		`"status":{"conditions":[{"type":"StatusPatch","status":"True","reason":"E2E"}]}}`
	ns, err := nss.Patch(ctx, "team-a", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if ns.Annotations["patched"] != "yes" || len(ns.Status.Conditions) != 1 || len(ns.Spec.Finalizers) != 1 {
		t.Errorf("status patch: annotations %v, conditions %v, finalizers %v (want the annotation, the condition, the kubernetes finalizer kept)",
			ns.Annotations, ns.Status.Conditions, ns.Spec.Finalizers)
	}
}
