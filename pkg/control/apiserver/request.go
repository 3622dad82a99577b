package apiserver

import (
	"net/http"
	"slices"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// requestInfoOf is the RequestInfo WithRequestInfo attached to r; a request that did not
// come through it (a handler used alone, in tests) is read now.
func requestInfoOf(r *http.Request) (*request.RequestInfo, error) {
	if info, ok := request.RequestInfoFrom(r.Context()); ok {
		return info, nil
	}
	return requestInfos.NewRequestInfo(r)
}

// requestInfo is the resource request a route serves: which resource, which object, which verb.
type requestInfo struct {
	GroupVersion schema.GroupVersion
	Resource     string
	Namespace    string
	Name         string
	Subresource  string
	Verb         string // get list watch create update patch delete deletecollection
}

// resourceRequest is the resource request ri describes; ok is false for anything the
// resource routes do not serve: non-resource paths (discovery, health, ...), paths deeper
// than RESOURCE/NAME/SUBRESOURCE, empty segments and the /proxy/ verb paths.
func resourceRequest(ri *request.RequestInfo) (info requestInfo, ok bool) {
	if !ri.IsResourceRequest || ri.Verb == "proxy" || len(ri.Parts) == 0 || len(ri.Parts) > 3 || slices.Contains(ri.Parts, "") {
		return info, false
	}
	info = requestInfo{GroupVersion: schema.GroupVersion{Group: ri.APIGroup, Version: ri.APIVersion},
		Resource: ri.Resource, Namespace: ri.Namespace, Subresource: ri.Subresource, Verb: ri.Verb}
	// The object is the path's: a list's RequestInfo.Name may be its metadata.name field
	// selector's, which is for authorization only.
	if len(ri.Parts) > 1 {
		info.Name = ri.Parts[1]
	}
	return info, true
}

// longRunningRequest is kube-apiserver's long-running check: watches and the streams
// proxied to nodes, which are not timed out nor counted in flight.
var longRunningRequest = genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"), sets.NewString(longRunningSubresources...))

// longRunningSubresources are the subresources whose requests last as long as the client
// wants, as kube-apiserver's long-running check has them.
var longRunningSubresources = []string{"exec", "attach", "portforward", "proxy", "log"}

// longRunning tells whether r may last as long as its client wants.
func longRunning(r *http.Request) bool {
	info, err := requestInfoOf(r)
	return err == nil && longRunningRequest(r, info)
}
