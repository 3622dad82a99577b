package filters

import (
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
)

// requestInfos reads what a request asks for, as kube-apiserver does: the one URL parser.
// Routing, authorization, audit, metrics and the long-running check all read its answer, so
// they cannot disagree about a request.
var requestInfos = &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// WithRequestInfo attaches k8s.io/apiserver's RequestInfo to the request once, as
// kube-apiserver's filter of that name; a request that has it already keeps it. A URL it
// cannot read (/api/v1/watch) is a 400, as in Kubernetes.
func WithRequestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := request.RequestInfoFrom(r.Context()); ok {
			next.ServeHTTP(w, r)
			return
		}
		info, err := requestInfos.NewRequestInfo(r)
		if err != nil {
			responsewriters.WriteError(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		next.ServeHTTP(w, r.WithContext(request.WithRequestInfo(r.Context(), info)))
	})
}

// RequestInfoOf is the RequestInfo WithRequestInfo attached to r; a request that did not
// come through it (a handler used alone, in tests) is read now.
func RequestInfoOf(r *http.Request) (*request.RequestInfo, error) {
	if info, ok := request.RequestInfoFrom(r.Context()); ok {
		return info, nil
	}
	return requestInfos.NewRequestInfo(r)
}

// longRunningRequest is kube-apiserver's long-running check: watches and the streams
// proxied to nodes, which are not timed out nor counted in flight.
var longRunningRequest = genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"), sets.NewString(longRunningSubresources...))

// longRunningSubresources are the subresources whose requests last as long as the client
// wants, as kube-apiserver's long-running check has them.
var longRunningSubresources = []string{"exec", "attach", "portforward", "proxy", "log"}

// LongRunning tells whether r may last as long as its client wants.
func LongRunning(r *http.Request) bool {
	info, err := RequestInfoOf(r)
	return err == nil && longRunningRequest(r, info)
}
