package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// TestRoutingAndAuthorizationAgree feeds odd paths through filters.WithRequestInfo and filters.Authorize to
// what routing does with them: the object routing resolves is the one authorized, with the
// same verb, because both read the one RequestInfo.
func TestRoutingAndAuthorizationAgree(t *testing.T) {
	s := newTestServer(t, storetest.Bolt(t), "10.96.0.0/12", "", 0)
	pods := func(ns, name, sub, verb string) *requestInfo {
		return &requestInfo{GroupVersion: schema.GroupVersion{Version: "v1"}, Resource: "pods", Namespace: ns, Name: name, Subresource: sub, Verb: verb}
	}
	namespaces := func(name, sub, verb string) *requestInfo {
		// Authorized in the namespace itself, as in Kubernetes; served as the cluster-scoped object.
		return &requestInfo{GroupVersion: schema.GroupVersion{Version: "v1"}, Resource: "namespaces", Namespace: name, Name: name, Subresource: sub, Verb: verb}
	}
	apps := func(resource, ns, name, sub, verb string) *requestInfo {
		return &requestInfo{GroupVersion: schema.GroupVersion{Group: "apps", Version: "v1"}, Resource: resource, Namespace: ns, Name: name, Subresource: sub, Verb: verb}
	}
	cases := []struct {
		method, path string
		want         *requestInfo // nil: not a resource request (routing serves discovery, health, ... or 404)
		served       bool         // routing resolves it to a served resource
	}{
		{"GET", "/api/v1/namespaces/x/pods/y/status", pods("x", "y", "status", "get"), true},
		{"PUT", "/api/v1/namespaces/x/pods/y/status", pods("x", "y", "status", "update"), true},
		{"POST", "/api/v1/namespaces/x/pods/y/binding", pods("x", "y", "binding", "create"), true},
		{"GET", "/api/v1/namespaces/x/pods/y/log", pods("x", "y", "log", "get"), false}, // connect, before resolve
		{"GET", "/api/v1/namespaces/x/pods/a%2Fb", pods("x", "a", "b", "get"), false},   // %2F splits, as in Kubernetes
		{"GET", "/api/v1/namespaces/x/pods/..", pods("x", "..", "", "get"), true},
		{"GET", "/api/v1/namespaces/x/pods/", pods("x", "", "", "list"), true},
		{"GET", "/api/v1/namespaces/x/pods/y/", pods("x", "y", "", "get"), true},
		{"GET", "/api/v1/namespaces/x/pods/y?watch=1", pods("x", "y", "", "get"), true}, // an object's GET ignores watch
		{"GET", "/api/v1/pods?watch=1", pods("", "", "", "watch"), true},
		{"GET", "/api/v1/pods?watch=true", pods("", "", "", "watch"), true},
		{"GET", "/api/v1/pods?watch=false", pods("", "", "", "list"), true},
		{"GET", "/api/v1/watch/namespaces/x/pods", pods("x", "", "", "watch"), true},
		{"DELETE", "/api/v1/namespaces/x/pods", pods("x", "", "", "deletecollection"), true},
		{"DELETE", "/api/v1/namespaces/x/pods/y", pods("x", "y", "", "delete"), true},
		{"GET", "/api/v1/namespaces", &requestInfo{GroupVersion: schema.GroupVersion{Version: "v1"}, Resource: "namespaces", Verb: "list"}, true},
		{"GET", "/api/v1/namespaces/x", namespaces("x", "", "get"), true},
		{"PUT", "/api/v1/namespaces/x/status", namespaces("x", "status", "update"), true},
		{"PUT", "/api/v1/namespaces/x/finalize", namespaces("x", "finalize", "update"), true},
		{"GET", "/apis/apps/v1/deployments", apps("deployments", "", "", "", "list"), true},
		{"GET", "/apis/apps/v1/namespaces/x/deployments/web", apps("deployments", "x", "web", "", "get"), true},
		{"PATCH", "/apis/apps/v1/namespaces/x/deployments/web/scale", apps("deployments", "x", "web", "scale", "patch"), true},
		{"DELETE", "/apis/apps/v1/namespaces/x/deployments", apps("deployments", "x", "", "", "deletecollection"), true},
		{"GET", "/healthz", nil, false},
		{"GET", "/openapi/v2", nil, false},
		{"GET", "/api", nil, false},
		{"GET", "/api/v1", nil, false},
		{"GET", "/apis", nil, false},
		{"GET", "/apis/apps", nil, false},
		{"GET", "/apis/apps/v1", nil, false},
	}
	var asked authorizer.Attributes
	az := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = a
		return authorizer.DecisionAllow, "", nil
	})
	// Deeper than RESOURCE/NAME/SUBRESOURCE: authorized as Kubernetes does (it reads the first
	// three), then not found by routing.
	r := httptest.NewRequest("GET", "/apis/apps/v1/namespaces/x/deployments/web/scale/extra", nil)
	ri, _ := filters.RequestInfoOf(r)
	if a, _ := filters.Attributes(r, authn.User{Name: "u"}); a.Subresource != "scale" || a.Name != "web" {
		t.Errorf("deeper path authorized as %+v", a)
	}
	if _, _, err := s.resolve(ri); err == nil {
		t.Errorf("deeper path routed")
	}
	// A list's metadata.name field selector is authorized as that name (Kubernetes'), while
	// routing lists: the name is the path's.
	r = httptest.NewRequest("GET", "/api/v1/namespaces/x/pods?fieldSelector=metadata.name%3Dy", nil)
	ri, _ = filters.RequestInfoOf(r)
	if a, _ := filters.Attributes(r, authn.User{Name: "u"}); a.Verb != "list" || a.Name != "y" {
		t.Errorf("list by name authorized as %+v", a)
	}
	if info, ok := resourceRequest(ri); !ok || info.Verb != "list" || info.Name != "" {
		t.Errorf("list by name routed as %+v", info)
	}
	for _, c := range cases {
		var routed *requestInfo
		served := false
		route := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			ri, err := filters.RequestInfoOf(r) // as serveAPI: the RequestInfo authorization read
			if err != nil {
				t.Fatalf("%s %s: %v", c.method, c.path, err)
			}
			if info, ok := resourceRequest(ri); ok {
				routed = &info
				_, _, err := s.resolve(ri)
				served = err == nil
			}
		})
		asked = nil
		r := httptest.NewRequest(c.method, c.path, nil)
		r = r.WithContext(authn.WithUser(r.Context(), authn.User{Name: "u"}))
		filters.WithRequestInfo(filters.Authorize(route, az)).ServeHTTP(httptest.NewRecorder(), r)
		if asked == nil {
			t.Fatalf("%s %s: not authorized", c.method, c.path)
		}
		if c.want == nil {
			if routed != nil || asked.IsResourceRequest() || asked.GetPath() != r.URL.Path {
				t.Errorf("%s %s: routed %+v, authorized resource request %v path %q", c.method, c.path, routed, asked.IsResourceRequest(), asked.GetPath())
			}
			continue
		}
		authorized := requestInfo{GroupVersion: schema.GroupVersion{Group: asked.GetAPIGroup(), Version: asked.GetAPIVersion()}, Resource: asked.GetResource(),
			Namespace: asked.GetNamespace(), Name: asked.GetName(), Subresource: asked.GetSubresource(), Verb: asked.GetVerb()}
		if routed == nil || *routed != *c.want || authorized != *c.want || served != c.served {
			t.Errorf("%s %s:\n    routed %+v (served %v)\nauthorized %+v\n      want %+v (served %v)", c.method, c.path, routed, served, authorized, *c.want, c.served)
		}
	}
}
