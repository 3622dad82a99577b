package apiserver

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Handlers of resources that are not stored (access reviews, token requests) live
// outside this package; DecodeBody lets them read requests as the stored ones do (and
// package responsewriters answer them).

// DecodeBody decodes a request body of kind want (JSON, YAML or protobuf) into obj. It
// first refuses with 406, as kube-apiserver does, a request that accepts only a Table or
// metadata view: these resources answer only the object itself.
func DecodeBody(r *http.Request, obj runtime.Object, want schema.GroupVersionKind) error {
	if onlyViews(r.Header.Get("Accept")) {
		return notAcceptable(fmt.Sprintf("only the object itself is served for %s, not a Table or metadata view", want.Kind))
	}
	_, err := decodeBody(r, obj, want, validationIgnore)
	return err
}

// onlyViews tells whether an Accept header names views (as=Table...) and nothing that is
// the object itself.
func onlyViews(header string) bool {
	views := false
	for _, part := range strings.Split(header, ",") {
		if _, params, err := mime.ParseMediaType(part); err == nil {
			if rep, ok := viewOf(params); ok && rep.as == "" {
				return false
			}
			views = views || params["as"] != ""
		}
	}
	return views
}
