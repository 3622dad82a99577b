package filters

import (
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
)

// WithPrettyJSON indents the JSON answers (errors too) of requests that ask for it, by
// ?pretty=true or by being from curl, wget or a browser, as kube-apiserver's serializers
// do; watches and streams go as they are, as kube's stream serializers write them.
func WithPrettyJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !responsewriters.PrettyRequested(r) || LongRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		pw, finish := responsewriters.RewriteJSON(w, responsewriters.Indent)
		defer finish()
		next.ServeHTTP(pw, r)
	})
}
