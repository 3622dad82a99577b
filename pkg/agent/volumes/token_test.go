package volumes

import (
	"context"
	"fmt"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// TestServiceAccountToken: the projected token comes from TokenRequest bound to the pod,
// is reused until 80% of its lifetime, then renewed.
func TestServiceAccountToken(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	client := fake.NewClientset()
	var got []*authnv1.TokenRequest
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		req := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenRequest).DeepCopy()
		got = append(got, req)
		req.CreationTimestamp = metav1.NewTime(now)
		req.Status = authnv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", len(got)),
			ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second))}
		return true, req, nil
	})
	m := New(t.TempDir(), client, nil)
	m.tokens.now = func() time.Time { return now }
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"}, Spec: corev1.PodSpec{ServiceAccountName: "robot"}}
	src := &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](1000), Audience: "vault"}
	read := func() string {
		files, err := m.tokenFile(context.Background(), pod, src, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return string(files["token"].Data)
	}
	if tok := read(); tok != "token-1" {
		t.Fatalf("first token %q", tok)
	}
	r := got[0]
	if b := r.Spec.BoundObjectRef; b == nil || b.Kind != "Pod" || b.Name != "p" || b.UID != "uid-1" || len(r.Spec.Audiences) != 1 || r.Spec.Audiences[0] != "vault" {
		t.Errorf("request %+v", r.Spec)
	}
	now = now.Add(799 * time.Second)
	if tok := read(); tok != "token-1" || len(got) != 1 {
		t.Errorf("before 80%% of its life: %q after %d requests, want the same token from 1", tok, len(got))
	}
	now = now.Add(2 * time.Second)
	if tok := read(); tok != "token-2" {
		t.Errorf("after 80%% of its life: %q, want a renewed token", tok)
	}
}
