package apiserver

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// TestDiscoveryRootsWithTrailingSlash: /apis/ and /api/ answer as /apis and /api do, as
// kube-apiserver's do (the conformance test "Discovery should validate PreferredVersion
// for each APIGroup" lists groups with GET /apis/).
func TestDiscoveryRootsWithTrailingSlash(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	for _, c := range []struct {
		path string
		into func() any
	}{
		{"/apis", func() any { return &metav1.APIGroupList{} }},
		{"/api", func() any { return &metav1.APIVersions{} }},
	} {
		want, got := c.into(), c.into()
		w := do(t, h, "GET", c.path, nil)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", c.path, w.Code, w.Body)
		}
		apitest.DecodeStrict(t, w.Body.Bytes(), want)
		w = do(t, h, "GET", c.path+"/", nil)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s/: %d %s", c.path, w.Code, w.Body)
		}
		apitest.DecodeStrict(t, w.Body.Bytes(), got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GET %s/ answered %+v, GET %s %+v", c.path, got, c.path, want)
		}
	}
}

// TestUnservedPathsAnswerNotFound: a group, version or resource the server does not serve
// (a CRD deleted, a typo) answers kube-apiserver's 404: under a built-in group its Status,
// whose words kubectl prints (`Error from server (NotFound): the server could not find the
// requested resource`), not a NotFound of an object with an empty name; under any other
// group the plain page of its last handler (client-go adds "(get RESOURCE.GROUP)").
func TestUnservedPathsAnswerNotFound(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	for _, path := range []string{
		"/apis/apps/v9",
		"/apis/apps/v9/deployments",
		"/apis/apps/v1/nosuch",
		"/apis/apps/v1/namespaces/default/nosuch/x",
		"/api/v2",
		"/api/v1/namespaces/default/nodes/n1", // nodes are not namespaced
	} {
		w := do(t, h, "GET", path, nil)
		if w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d %s", path, w.Code, w.Body)
			continue
		}
		st := apitest.ResponseStatus(t, w.Body.Bytes())
		if st.Reason != metav1.StatusReasonNotFound || st.Message != "the server could not find the requested resource" {
			t.Errorf("GET %s: %+v", path, st)
		}
	}
	for _, path := range []string{"/apis/nosuch.example.com", "/apis/nosuch.example.com/v1", "/apis/nosuch.example.com/v1/namespaces/default/things"} {
		if w := do(t, h, "GET", path, nil); w.Code != http.StatusNotFound || w.Body.String() != "404 page not found\n" || w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("GET %s: %d %s %q", path, w.Code, w.Header().Get("Content-Type"), w.Body)
		}
	}
}

// TestVersionNamesEmulationAndMinCompatibility: /version (kubectl version -o json) carries
// the emulation and minimum compatibility versions kube-apiserver's (component-base's
// effective version) does: the API level served, and the one before it.
func TestVersionNamesEmulationAndMinCompatibility(t *testing.T) {
	s, _ := newCachedServer(t)
	w := do(t, s.Handler(), "GET", "/version", nil)
	var info version.Info
	apitest.DecodeStrict(t, w.Body.Bytes(), &info)
	if info.Major != "1" || info.EmulationMajor != info.Major || info.EmulationMinor != info.Minor ||
		info.MinCompatibilityMajor != "1" || info.MinCompatibilityMinor == "" || info.MinCompatibilityMinor >= info.Minor {
		t.Errorf("version: %#v", info)
	}
}

// Namespaces have no deletecollection in kube-apiserver (its namespace REST has no
// DeleteCollection): discovery does not list it and DELETE of the collection is its 405,
// not the deletion of every namespace.
func TestNamespacesHaveNoDeleteCollection(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	var list metav1.APIResourceList
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1", nil).Body.Bytes(), &list)
	for _, r := range list.APIResources {
		if r.Name == "namespaces" && !slices.Equal(r.Verbs, []string{"create", "delete", "get", "list", "patch", "update", "watch"}) {
			t.Errorf("namespaces verbs %v, want kube's", r.Verbs)
		}
	}
	w := do(t, h, "DELETE", "/api/v1/namespaces", nil)
	if st := apitest.ResponseStatus(t, w.Body.Bytes()); w.Code != http.StatusMethodNotAllowed || st.Message != "the server does not allow this method on the requested resource" {
		t.Errorf("DELETE /api/v1/namespaces: %d %s, want kube's 405", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/api/v1/namespaces/default", nil); w.Code != http.StatusOK || strings.Contains(w.Body.String(), "deletionTimestamp") {
		t.Errorf("namespace default after the refused delete: %d %s", w.Code, w.Body)
	}
}
