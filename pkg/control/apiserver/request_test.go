package apiserver

import (
	"net/http/httptest"
	"testing"
)

func TestParseResourcePath(t *testing.T) {
	cases := []struct {
		method, path string
		want         requestInfo
		ok           bool
	}{
		{"GET", "/api/v1/pods", requestInfo{Resource: "pods", Verb: "list"}, true},
		{"GET", "/api/v1/pods?watch=1", requestInfo{Resource: "pods", Verb: "watch"}, true},
		{"GET", "/api/v1/namespaces/default/pods/web", requestInfo{Namespace: "default", Resource: "pods", Name: "web", Verb: "get"}, true},
		{"PUT", "/api/v1/namespaces/default/pods/web/status", requestInfo{Namespace: "default", Resource: "pods", Name: "web", Subresource: "status", Verb: "update"}, true},
		{"POST", "/api/v1/namespaces/default/pods/web/binding", requestInfo{Namespace: "default", Resource: "pods", Name: "web", Subresource: "binding", Verb: "create"}, true},
		{"GET", "/api/v1/namespaces/team", requestInfo{Resource: "namespaces", Name: "team", Verb: "get"}, true},
		{"PUT", "/api/v1/namespaces/team/finalize", requestInfo{Resource: "namespaces", Name: "team", Subresource: "finalize", Verb: "update"}, true},
		{"PATCH", "/api/v1/namespaces/team/status", requestInfo{Resource: "namespaces", Name: "team", Subresource: "status", Verb: "patch"}, true},
		{"DELETE", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", requestInfo{Namespace: "kube-node-lease", Resource: "leases", Verb: "deletecollection"}, true},
		{"GET", "/api/v1/namespaces/default/pods/web/status/extra", requestInfo{}, false},
		{"GET", "/apis/apps", requestInfo{}, false},
	}
	for _, c := range cases {
		got, ok := parseResourcePath(httptest.NewRequest(c.method, c.path, nil))
		if ok != c.ok {
			t.Errorf("%s %s: ok=%v, want %v", c.method, c.path, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		got.GroupVersion = c.want.GroupVersion
		if got != c.want {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.method, c.path, got, c.want)
		}
	}
}
