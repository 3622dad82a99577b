package apiserver

import (
	"net/http"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Extension is an API group-version served by a handler of its own instead of the
// registry and store (metrics.k8s.io, which kube-apiserver's aggregator would proxy to
// metrics-server). It is listed in discovery beside the built-in groups.
type Extension struct {
	GroupVersion schema.GroupVersion
	Resources    []metav1.APIResource
	Handler      http.Handler // gets every request under /apis/GROUP/VERSION/
}

// AddExtension serves e beside those of Config.Extensions, for groups whose handler needs
// what is made after the server (the authorizer's reviews); call it before serving.
func (s *Server) AddExtension(e Extension) {
	s.extensions = append(s.extensions, e)
	s.discovery.AddGroupVersion(e.GroupVersion, e.Resources)
}

// serveExtension hands /apis/GROUP/VERSION[/...] of an extension to it; ok is false for
// any other path.
func (s *Server) serveExtension(w http.ResponseWriter, r *http.Request) bool {
	for _, e := range s.extensions {
		prefix := "/apis/" + e.GroupVersion.String()
		rest, found := strings.CutPrefix(r.URL.Path, prefix)
		switch {
		case !found:
			continue
		case rest == "" || rest == "/":
			responsewriters.WriteJSON(w, http.StatusOK, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: e.GroupVersion.String(), APIResources: e.Resources})
			return true
		case strings.HasPrefix(rest, "/"):
			e.Handler.ServeHTTP(w, r)
			return true
		}
	}
	return false
}
