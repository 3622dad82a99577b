// Package responsewriters writes answers as every Kubernetes client reads them: an error as
// a metav1.Status, an object as JSON. The request filters, the REST handlers and the
// handlers of resources served outside the registry (access reviews, token requests) all
// answer through it, as through k8s.io/apiserver's pkg/endpoints/handlers/responsewriters.
package responsewriters

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// WriteJSON writes v as the response body.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client going away mid-body is not ours to report
}

// WriteObject answers obj as JSON with its apiVersion and kind set.
func WriteObject(w http.ResponseWriter, code int, obj runtime.Object, gvk schema.GroupVersionKind) {
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	WriteJSON(w, code, obj)
}

// WriteError writes err as a metav1.Status, the body every Kubernetes client understands.
func WriteError(w http.ResponseWriter, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 { // as kube-apiserver's error writer
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	WriteJSON(w, code, st)
}

// UnknownError is the status kube-apiserver gives an error that is no status: 500, reason
// empty, the error's text as message.
func UnknownError(err error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()}}
}
