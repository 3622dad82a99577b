package apiserver

import (
	"net/http"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		decodeStrict(t, w.Body.Bytes(), want)
		w = do(t, h, "GET", c.path+"/", nil)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s/: %d %s", c.path, w.Code, w.Body)
		}
		decodeStrict(t, w.Body.Bytes(), got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GET %s/ answered %+v, GET %s %+v", c.path, got, c.path, want)
		}
	}
}
