package core_test

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A TokenRequest is a create of serviceaccounts/token, which kube-apiserver's
// NamespaceLifecycle refuses in a terminating namespace (the kubelet's "failed to fetch
// token" while a namespace goes) and answers "namespaces ... not found" in a missing one.
func TestTokenRequestNamespaceLifecycle(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx := context.Background()
	ns := c.Namespace + "-going"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A held ConfigMap keeps the namespace terminating for the test.
	cms := c.Client.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cms.Patch(context.Background(), "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := c.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "a", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if want := `serviceaccounts "a" is forbidden: unable to create new content in namespace ` + ns + ` because it is being terminated`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("token in a terminating namespace: %v, want %q", err, want)
	}
	_, err = c.Client.CoreV1().ServiceAccounts(ns+"-missing").CreateToken(ctx, "a", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if want := `namespaces "` + ns + `-missing" not found`; !apierrors.IsNotFound(err) || err.Error() != want {
		t.Errorf("token in a missing namespace: %v, want %q", err, want)
	}
}
