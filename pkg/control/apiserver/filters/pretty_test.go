package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// JSON answers are indented as kube-apiserver's pretty serializer writes them for a client
// that asks (?pretty, curl, wget, a browser); other clients, other types, watches,
// streams and the documents kube serves as stored get what the handler wrote.
func TestPrettyJSON(t *testing.T) {
	h := WithPrettyJSON(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("text") != "" {
			w.Header().Set("Content-Type", "text/plain")
		} else {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "26")
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","a":[1]}` + "\n"))
	}))
	const compact, indented = `{"kind":"Status","a":[1]}` + "\n", "{\n  \"kind\": \"Status\",\n  \"a\": [\n    1\n  ]\n}"
	for _, tc := range []struct{ path, agent, want string }{
		{"/api/v1/namespaces/a/pods/b", "curl/8.5.0", indented},
		{"/api/v1/namespaces/a/pods/b", "Wget/1.21", indented},
		{"/api/v1/namespaces/a/pods/b", "Mozilla/5.0 (X11)", indented},
		{"/api/v1/namespaces/a/pods/b?pretty=true", "kubectl/v1.32.0", indented},
		{"/api/v1/namespaces/a/pods/b?pretty=false", "curl/8.5.0", compact},
		{"/api/v1/namespaces/a/pods/b?pretty=", "curl/8.5.0", indented},
		{"/api/v1/namespaces/a/pods/b", "kubectl/v1.32.0", compact},
		{"/api/v1/namespaces/a/pods/b?text=1", "curl/8.5.0", compact},
		{"/api/v1/pods?watch=true", "curl/8.5.0", compact},
		{"/api/v1/namespaces/a/pods/b/log", "curl/8.5.0", compact},
		{"/version", "curl/8.5.0", indented},
		{"/openapi/v3/apis/apps/v1", "curl/8.5.0", compact},
		{"/openapi/v2", "curl/8.5.0", compact},
		{"/.well-known/openid-configuration", "curl/8.5.0", compact},
		{"/openid/v1/jwks", "curl/8.5.0", compact},
	} {
		r := httptest.NewRequest("GET", tc.path, nil)
		r.Header.Set("User-Agent", tc.agent)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusNotFound || w.Body.String() != tc.want {
			t.Errorf("%s from %s: %d %q, want 404 %q", tc.path, tc.agent, w.Code, w.Body.String(), tc.want)
		}
		if tc.want == indented && w.Header().Get("Content-Length") != "" {
			t.Errorf("%s from %s: the handler's Content-Length kept for the indented body", tc.path, tc.agent)
		}
	}
}
