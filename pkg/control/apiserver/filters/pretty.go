package filters

import (
	"net/http"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
)

// WithPrettyJSON indents the JSON answers (errors too) of requests that ask for it, by
// ?pretty=true or by being from curl, wget or a browser, as kube-apiserver's serializers
// do; watches and streams go as they are, as kube's stream serializers write them, and so
// do the documents kube serves as stored bytes (OpenAPI, service account issuer discovery).
func WithPrettyJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !responsewriters.PrettyRequested(r) || LongRunning(r) || servedAsStored(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		pw, finish := responsewriters.RewriteJSON(w, responsewriters.Indent)
		defer finish()
		next.ServeHTTP(pw, r)
	})
}

// servedAsStored are the paths of documents kube-apiserver writes as it holds them.
func servedAsStored(path string) bool {
	return strings.HasPrefix(path, "/openapi/") || strings.HasPrefix(path, "/.well-known/") || strings.HasPrefix(path, "/openid/")
}
