package nodeapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The node API asks the API server whether each caller may do what it asks
// (SubjectAccessReview), as the kubelet's Webhook authorization mode does: a request is
// a verb on the node's nodes/<subresource>, the subresource named by its path.

// How long the kubelet caches answers (--authorization-webhook-cache-*-ttl).
const (
	allowedTTL = 5 * time.Minute
	deniedTTL  = 30 * time.Second
)

type reviewer struct {
	client kubernetes.Interface
	node   string
	mu     sync.Mutex
	cache  map[string]decision
}

type decision struct {
	allowed bool
	reason  string
	expires time.Time
}

// subresourceFor maps a node API path to the nodes subresource that authorizes it, as
// the kubelet does; everything without its own is nodes/proxy.
func subresourceFor(path string) string {
	for _, p := range []struct{ prefix, sub string }{
		{"/stats", "stats"}, {"/metrics", "metrics"}, {"/logs", "log"}, {"/spec", "spec"},
		{"/checkpoint", "checkpoint"}, {"/configz", "configz"}, {"/healthz", "healthz"}, {"/pods", "pods"},
	} {
		if path == p.prefix || strings.HasPrefix(path, p.prefix+"/") {
			return p.sub
		}
	}
	return "proxy"
}

func verbFor(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return "get"
}

// allow asks (or remembers) whether the client certificate's user may make r.
func (v *reviewer) allow(ctx context.Context, r *http.Request) (bool, string, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return false, "no verified client certificate", nil
	}
	cert := r.TLS.VerifiedChains[0][0]
	user, groups := cert.Subject.CommonName, append(append([]string(nil), cert.Subject.Organization...), "system:authenticated")
	verb, sub := verbFor(r.Method), subresourceFor(r.URL.Path)
	key := strings.Join([]string{user, strings.Join(groups, ","), verb, sub}, "\x00")
	v.mu.Lock()
	d, ok := v.cache[key]
	v.mu.Unlock()
	if ok && time.Now().Before(d.expires) {
		return d.allowed, d.reason, nil
	}
	review, err := v.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Version: "v1", Resource: "nodes", Subresource: sub, Name: v.node},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	d = decision{allowed: review.Status.Allowed, reason: review.Status.Reason, expires: time.Now().Add(deniedTTL)}
	if d.allowed {
		d.expires = time.Now().Add(allowedTTL)
	}
	v.mu.Lock()
	if len(v.cache) > 4096 { // bounded: a flood of distinct users cannot grow it
		v.cache = map[string]decision{}
	}
	v.cache[key] = d
	v.mu.Unlock()
	if !d.allowed {
		return false, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=%s)", user, verb, sub), nil
	}
	return true, "", nil
}

// authorize answers 403 (or 500 when the API cannot be asked) and returns false for a
// request its caller may not make.
func (v *reviewer) authorize(w http.ResponseWriter, r *http.Request) bool {
	ok, reason, err := v.allow(r.Context(), r)
	switch {
	case err != nil:
		http.Error(w, "Authorization error: "+err.Error(), http.StatusInternalServerError)
		return false
	case !ok:
		http.Error(w, reason, http.StatusForbidden)
		return false
	}
	return true
}
