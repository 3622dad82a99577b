package filters

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// TestAuthorize: the filter asks the authorizer with the request's attributes (selectors
// included) and answers a refusal as kube-apiserver does.
func TestAuthorize(t *testing.T) {
	var asked authorizer.Attributes
	az := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = a
		if a.GetUser().GetName() == "root" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "no rule", nil
	})
	reached := false
	h := Authorize(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }), az)
	do := func(user, method, url string) *httptest.ResponseRecorder {
		reached = false
		r := httptest.NewRequest(method, url, nil)
		if user != "" {
			r = r.WithContext(authn.WithUser(r.Context(), authn.User{Name: user, Groups: []string{"g"}}))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := do("vera", http.MethodGet, "/api/v1/namespaces/team/pods?watch=true&fieldSelector=spec.nodeName%3Dn1")
	if w.Code != http.StatusForbidden || reached {
		t.Fatalf("refused request: %d, reached %v", w.Code, reached)
	}
	st := apitest.ResponseStatus(t, w.Body.Bytes())
	if want := `pods is forbidden: User "vera" cannot watch resource "pods" in API group "" in the namespace "team": no rule`; st.Message != want || st.Reason != metav1.StatusReasonForbidden {
		t.Errorf("status %q (%s), want %q", st.Message, st.Reason, want)
	}
	reqs, err := asked.GetFieldSelector()
	if err != nil || len(reqs) != 1 || reqs[0].Field != "spec.nodeName" || reqs[0].Value != "n1" {
		t.Errorf("field selector %v %v", reqs, err)
	}
	do("vera", http.MethodPost, "/apis/apps/v1/namespaces/team/deployments/web/scale")
	if asked.GetVerb() != "create" || asked.GetAPIGroup() != "apps" || asked.GetResource() != "deployments" || asked.GetSubresource() != "scale" || asked.GetName() != "web" {
		t.Errorf("asked %+v", asked)
	}
	w = do("vera", http.MethodGet, "/metrics")
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.Message != `forbidden: User "vera" cannot get path "/metrics": no rule` {
		t.Errorf("non-resource refusal %q (%v)", st.Message, err)
	}
	if w := do("root", http.MethodDelete, "/api/v1/nodes/n1"); w.Code != http.StatusOK || !reached || asked.GetVerb() != "delete" {
		t.Errorf("allowed request: %d, reached %v", w.Code, reached)
	}
	// Impersonation: root may (its user and groups become the request's), vera may not.
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/team/secrets", nil)
	r.Header.Set("Impersonate-User", "vera")
	r.Header.Add("Impersonate-Group", "team")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), authn.User{Name: "root"})))
	if w.Code != http.StatusForbidden || asked.GetUser().GetName() != "vera" || len(asked.GetUser().GetGroups()) != 2 {
		t.Errorf("root as vera: %d, asked as %+v", w.Code, asked.GetUser())
	}
	r = httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/team/pods", nil)
	r.Header.Set("Impersonate-User", "root")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), authn.User{Name: "vera"})))
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Code != http.StatusForbidden ||
		st.Message != `users "root" is forbidden: User "vera" cannot impersonate resource "users" in API group "" at the cluster scope: no rule` {
		t.Errorf("vera as root: %d %q", w.Code, st.Message)
	}
	r = httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	r.Header.Set("Impersonate-Group", "g")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), authn.User{Name: "root"})))
	if w.Code != http.StatusBadRequest {
		t.Errorf("a group without a user: %d, want 400", w.Code)
	}
	if w := do("", http.MethodGet, "/healthz"); !reached {
		t.Errorf("anonymous public path (already limited by authn.Authenticate) was not passed on: %d", w.Code)
	}
}
