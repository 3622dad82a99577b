package apiserver

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requestInfo is what a resource URL says: which resource, which object, which verb.
type requestInfo struct {
	GroupVersion schema.GroupVersion
	Resource     string
	Namespace    string
	Name         string
	Subresource  string
	Verb         string // get list watch create update patch delete deletecollection
}

// parseResourcePath reads /api/v1/... and /apis/GROUP/VERSION/... resource paths. ok is false
// for anything that is not a resource path (discovery, health, ...).
func parseResourcePath(r *http.Request) (requestInfo, bool) {
	parts := splitPath(r.URL.Path)
	var info requestInfo
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		info.GroupVersion = schema.GroupVersion{Version: parts[1]}
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		info.GroupVersion = schema.GroupVersion{Group: parts[1], Version: parts[2]}
		parts = parts[3:]
	default:
		return info, false
	}
	// namespaces/NS/RESOURCE/... addresses namespaced resources; namespaces[/NAME[/SUB]] the
	// namespace objects themselves, whose subresources are status and finalize.
	if parts[0] == "namespaces" && len(parts) >= 3 && !namespaceSubresources[parts[2]] {
		info.Namespace = parts[1]
		parts = parts[2:]
	}
	info.Resource = parts[0]
	if len(parts) > 1 {
		info.Name = parts[1]
	}
	if len(parts) > 2 {
		info.Subresource = parts[2]
	}
	if len(parts) > 3 {
		return info, false
	}
	info.Verb = verbFor(r, info.Name != "")
	return info, true
}

var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

func verbFor(r *http.Request, named bool) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if isTrue(r.URL.Query().Get("watch")) {
			return "watch"
		}
		if named {
			return "get"
		}
		return "list"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return ""
}

func isTrue(v string) bool { return v == "1" || strings.EqualFold(v, "true") }

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
