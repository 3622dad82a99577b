package controlplane

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The namespace controller works only on a namespace that still has the "kubernetes"
// finalizer in spec.finalizers, as kube-controller-manager's: once it is gone (through
// /finalize), the content stays and no condition is written, whatever else holds the
// namespace.
func TestFinalizedNamespaceKeepsContent(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "finalized", Finalizers: []string{"example.com/hold"}}}
	created, err := c.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().ConfigMaps("finalized").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created.Spec.Finalizers = nil
	if _, err := c.client.CoreV1().Namespaces().Finalize(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.mustKubectl(t, "", "delete", "namespace", "finalized", "--wait=false")
	time.Sleep(3 * time.Second) // the controller would have deleted it by now
	if _, err := c.client.CoreV1().ConfigMaps("finalized").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("content of a namespace without the kubernetes finalizer: %v", err)
	}
	got, err := c.client.CoreV1().Namespaces().Get(ctx, "finalized", metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.NamespaceTerminating || len(got.Status.Conditions) != 0 {
		t.Errorf("namespace held by its own finalizer: %v, phase %q, conditions %+v", err, got.Status.Phase, got.Status.Conditions)
	}
	got.Finalizers = nil
	if _, err := c.client.CoreV1().Namespaces().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "namespace gone", func() bool {
		_, err := c.client.CoreV1().Namespaces().Get(ctx, "finalized", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
