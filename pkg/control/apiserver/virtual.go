package apiserver

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Handlers of resources that are not stored (access reviews, token requests) live
// outside this package; these let them read and answer requests as the stored ones do.

// DecodeBody decodes a request body of kind want (JSON, YAML or protobuf) into obj.
func DecodeBody(r *http.Request, obj runtime.Object, want schema.GroupVersionKind) error {
	_, err := decodeBody(r, obj, want, validationIgnore)
	return err
}

// WriteObject answers obj as JSON with its apiVersion and kind set.
func WriteObject(w http.ResponseWriter, code int, obj runtime.Object, gvk schema.GroupVersionKind) {
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	writeJSON(w, code, obj)
}

// WriteError answers err as a metav1.Status.
func WriteError(w http.ResponseWriter, err error) { writeError(w, err) }
