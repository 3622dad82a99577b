package apiserver

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
)

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
