package apiserver

import (
	"net/http"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
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
func (s *Server) AddExtension(e Extension) { s.extensions = append(s.extensions, e) }

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

// extensionGroups are the extensions' entries of /apis.
func (s *Server) extensionGroups() []metav1.APIGroup {
	var out []metav1.APIGroup
	for _, e := range s.extensions {
		v := metav1.GroupVersionForDiscovery{GroupVersion: e.GroupVersion.String(), Version: e.GroupVersion.Version}
		out = append(out, metav1.APIGroup{Name: e.GroupVersion.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return out
}

// extensionDiscovery are the extensions' entries of aggregated discovery.
func (s *Server) extensionDiscovery() []apidiscoveryv2.APIGroupDiscovery {
	var out []apidiscoveryv2.APIGroupDiscovery
	for _, e := range s.extensions {
		v := apidiscoveryv2.APIVersionDiscovery{Version: e.GroupVersion.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		for _, r := range e.Resources {
			scope := apidiscoveryv2.ScopeCluster
			if r.Namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			v.Resources = append(v.Resources, apidiscoveryv2.APIResourceDiscovery{Resource: r.Name, Scope: scope, Verbs: r.Verbs,
				ResponseKind: &metav1.GroupVersionKind{Group: e.GroupVersion.Group, Version: e.GroupVersion.Version, Kind: r.Kind}})
		}
		out = append(out, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: e.GroupVersion.Group}, Versions: []apidiscoveryv2.APIVersionDiscovery{v}})
	}
	return out
}
