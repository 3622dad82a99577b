package apiserver

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// pods/proxy and services/proxy are authorized as kube-apiserver authorizes them: the
// HTTP method's verb on the proxy subresource of the name as written (NAME:PORT
// included), and the path after /proxy goes to the pod with its trailing slash.
func TestProxyAttributesAndSubpath(t *testing.T) {
	for _, tc := range []struct {
		method, path              string
		verb, resource, name, sub string
	}{
		{http.MethodGet, "/api/v1/namespaces/default/pods/web/proxy/", "get", "pods", "web", "/"},
		{http.MethodPost, "/api/v1/namespaces/default/services/echo:80/proxy/echo", "create", "services", "echo:80", "/echo"},
		{http.MethodPut, "/api/v1/namespaces/default/services/https:echo:web/proxy/a/b/", "update", "services", "https:echo:web", "/a/b/"},
		{http.MethodDelete, "/api/v1/namespaces/default/pods/web:8080/proxy", "delete", "pods", "web:8080", ""},
		{http.MethodPatch, "/api/v1/namespaces/default/pods/web/proxy/x", "patch", "pods", "web", "/x"},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		a, err := Attributes(r, User{Name: "vera"})
		if err != nil {
			t.Fatal(err)
		}
		if a.Verb != tc.verb || a.Resource != tc.resource || a.Subresource != "proxy" || a.Name != tc.name || a.Namespace != "default" {
			t.Errorf("%s %s: attributes %+v", tc.method, tc.path, a)
		}
		ri, err := requestInfoOf(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := proxySubpath(ri); got != tc.sub {
			t.Errorf("%s: subpath %q, want %q", tc.path, got, tc.sub)
		}
	}
}
