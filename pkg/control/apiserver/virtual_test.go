package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestVirtualRefusesViews: a resource that is not stored (an access review) has no Table or
// metadata view, and asking for only those gets 406 as from kube-apiserver (the table conversion
// conformance test posts a SelfSubjectAccessReview asking for a Table); JSON still decodes.
func TestVirtualRefusesViews(t *testing.T) {
	kind := authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview")
	body := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/","verb":"get"}}}`
	for accept, want := range map[string]int{
		"application/json;as=Table;v=v1;g=meta.k8s.io":                         http.StatusNotAcceptable,
		"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io":         http.StatusNotAcceptable,
		"application/vnd.kubernetes.protobuf, application/json":                0,
		"application/json;as=Table;v=v1;g=meta.k8s.io, application/json;q=0.5": 0, // the object itself is acceptable too
		"": 0,
	} {
		r := httptest.NewRequest("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", accept)
		var review authorizationv1.SelfSubjectAccessReview
		err := DecodeBody(r, &review, kind)
		switch {
		case want == 0 && (err != nil || review.Spec.NonResourceAttributes == nil):
			t.Errorf("Accept %q: err %v, review %+v", accept, err, review.Spec)
		case want != 0 && codeOf(err) != want:
			t.Errorf("Accept %q: err %v, want code %d", accept, err, want)
		}
	}
}

func codeOf(err error) int {
	if s, ok := err.(apierrors.APIStatus); ok {
		return int(s.Status().Code)
	}
	return 0
}
