package podrefs

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestGet: a Secret that is there is found; a missing optional one is not, without error;
// a missing required one is the kubelet's `secret "x" not found`.
func TestGet(t *testing.T) {
	ctx := context.Background()
	secrets := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "creds"}}).CoreV1().Secrets("default")
	if s, found, err := Get(ctx, secrets.Get, "secret", "creds", false); err != nil || !found || s.Name != "creds" {
		t.Errorf("creds: %v, %v, %v", s, found, err)
	}
	if s, found, err := Get(ctx, secrets.Get, "secret", "gone", true); err != nil || found || s != nil {
		t.Errorf("optional gone: %v, %v, %v", s, found, err)
	}
	if _, found, err := Get(ctx, secrets.Get, "secret", "gone", false); found || err == nil || err.Error() != `secret "gone" not found` {
		t.Errorf("required gone: %v, %v", found, err)
	}
}
