package connect

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
		a, err := filters.Attributes(r, authn.User{Name: "vera"})
		if err != nil {
			t.Fatal(err)
		}
		if a.Verb != tc.verb || a.Resource != tc.resource || a.Subresource != "proxy" || a.Name != tc.name || a.Namespace != "default" {
			t.Errorf("%s %s: attributes %+v", tc.method, tc.path, a)
		}
		ri, err := filters.RequestInfoOf(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := proxySubpath(ri); got != tc.sub {
			t.Errorf("%s: subpath %q, want %q", tc.path, got, tc.sub)
		}
	}
}

// The upgrade-aware proxy's errors (pods/proxy, services/proxy, port-forward) are written
// as kube-apiserver's connect responder writes them: a Status as it is, any other error a
// 500 with its text and no reason ("error dialing backend: ...", not "Internal error
// occurred: ...").
func TestProxyErrorsAsKubeApiserver(t *testing.T) {
	for _, tc := range []struct {
		err     error
		code    int
		message string
	}{
		{errors.New("error dialing backend: dial tcp 10.244.1.9:80: connect: no route to host"), 500, "error dialing backend: dial tcp 10.244.1.9:80: connect: no route to host"},
		{apierrors.NewServiceUnavailable("error trying to reach service: x"), 503, "error trying to reach service: x"},
	} {
		w := httptest.NewRecorder()
		restResponder{}.Error(w, httptest.NewRequest("GET", "/", nil), tc.err)
		st := apitest.ResponseStatus(t, w.Body.Bytes())
		if w.Code != tc.code || st.Message != tc.message || (tc.code == 500 && st.Reason != "") {
			t.Errorf("%v: %d %s, want %d %q", tc.err, w.Code, w.Body, tc.code, tc.message)
		}
	}
}
