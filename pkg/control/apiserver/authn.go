package apiserver

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// publicPaths are what an anonymous client may read.
var publicPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true, "/version": true}

// User is an authenticated client.
type User struct {
	Name   string
	Groups []string
}

// allAuthenticated is the group every authenticated user is in, as in Kubernetes.
const allAuthenticated = "system:authenticated"

type userKey struct{}

// UserFrom returns the authenticated user of a request.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

// Authenticate wraps h: a verified client certificate names the user (CN) and groups (O), as
// in Kubernetes' x509 authenticator; anonymous requests reach only the public paths.
func Authenticate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
			cert := r.TLS.VerifiedChains[0][0]
			u := User{Name: cert.Subject.CommonName, Groups: append(cert.Subject.Organization, allAuthenticated)}
			h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
			return
		}
		if publicPaths[r.URL.Path] {
			h.ServeHTTP(w, r)
			return
		}
		writeError(w, apierrors.NewUnauthorized("Unauthorized"))
	})
}
