package nodeapi

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestSubjectAccessReview: each request is reviewed as a verb on nodes/<subresource> of
// this node for the certificate's user and groups; answers are cached.
func TestSubjectAccessReview(t *testing.T) {
	client := fake.NewClientset()
	var reviews atomic.Int32
	var last authzv1.SubjectAccessReviewSpec
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		reviews.Add(1)
		sar := a.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview).DeepCopy()
		last = sar.Spec
		sar.Status.Allowed = sar.Spec.User == "kube-apiserver-kubelet-client" && sar.Spec.ResourceAttributes.Subresource == "proxy"
		return true, sar, nil
	})
	s := New(Config{NodeName: "node-1"}, nil, client, func() error { return nil }, nil, nil)
	do := func(user, method, path string) int {
		r := httptest.NewRequest(method, path, nil)
		if user != "" {
			r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: pkix.Name{CommonName: user, Organization: []string{"g"}}}}}}
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	if code := do("system:node:node-2", http.MethodPost, "/exec/ns/p/c"); code != http.StatusForbidden {
		t.Errorf("another node's exec: %d, want 403", code)
	}
	if a := last.ResourceAttributes; last.User != "system:node:node-2" || a.Verb != "create" || a.Resource != "nodes" || a.Subresource != "proxy" || a.Name != "node-1" ||
		len(last.Groups) != 2 || last.Groups[1] != "system:authenticated" {
		t.Errorf("review asked %+v %+v", last, last.ResourceAttributes)
	}
	if code := do("kube-apiserver-kubelet-client", http.MethodGet, "/healthz"); code != http.StatusForbidden || last.ResourceAttributes.Subresource != "healthz" {
		t.Errorf("healthz is nodes/healthz: %d, asked %q", code, last.ResourceAttributes.Subresource)
	}
	n := reviews.Load()
	for range 3 {
		// Allowed through to the mux, which serves no such path.
		if code := do("kube-apiserver-kubelet-client", http.MethodGet, "/no-such-path"); code != http.StatusNotFound {
			t.Fatalf("the API server's client: %d, want 404 from behind the review", code)
		}
	}
	if got := reviews.Load() - n; got != 1 {
		t.Errorf("%d reviews for 3 identical requests, want 1 (cached)", got)
	}
	if code := do("", http.MethodGet, "/pods"); code != http.StatusForbidden {
		t.Errorf("no certificate: %d, want 403", code)
	}
}
