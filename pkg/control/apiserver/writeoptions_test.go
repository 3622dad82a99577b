package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A write whose ?fieldValidation= is none of Ignore, Warn, Strict, or whose ?fieldManager= is
// longer than 128 bytes, is refused as kube-apiserver refuses its CreateOptions,
// UpdateOptions or PatchOptions: 422 naming the options kind and the field.
func TestWriteOptionsErrors(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}
	if w := do(t, h, "POST", "/api/v1/namespaces/default/configmaps", cm); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	long := strings.Repeat("m", 129)
	const unsupported = `fieldValidation: Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", "Warn"`
	for _, tc := range []struct {
		method, path string
		body         any
		want         string
	}{
		{"POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Bogus", cm, `CreateOptions.meta.k8s.io "" is invalid: ` + unsupported},
		{"PUT", "/api/v1/namespaces/default/configmaps/cm?fieldValidation=Bogus", cm, `UpdateOptions.meta.k8s.io "" is invalid: ` + unsupported},
		{"PATCH", "/api/v1/namespaces/default/configmaps/cm?fieldValidation=Bogus", nil, `PatchOptions.meta.k8s.io "" is invalid: ` + unsupported},
		{"POST", "/api/v1/namespaces/default/configmaps?fieldManager=" + long, cm, `CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes`},
		{"POST", "/api/v1/namespaces/default/configmaps?fieldManager=" + long + "&fieldValidation=Bogus", cm,
			`CreateOptions.meta.k8s.io "" is invalid: [fieldManager: Too long: may not be more than 128 bytes, ` + unsupported + `]`},
	} {
		var w *httptest.ResponseRecorder
		if tc.method == "PATCH" {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/merge-patch+json")
			w = httptest.NewRecorder()
			h.ServeHTTP(w, req)
		} else {
			w = do(t, h, tc.method, tc.path, tc.body)
		}
		status := apitest.ResponseStatus(t, w.Body.Bytes())
		if w.Code != http.StatusUnprocessableEntity || status.Reason != metav1.StatusReasonInvalid || status.Message != tc.want {
			t.Errorf("%s %s: %d %s %q, want 422 Invalid %q", tc.method, tc.path, w.Code, status.Reason, status.Message, tc.want)
		}
	}
}
