// Package authn tells who sent a request: the User a verified client certificate or a
// bearer token names (Authenticate), carried in the request's context (UserFrom), as
// k8s.io/apiserver's x509 and token authenticators and the user of its request context.
package authn

import (
	"context"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
)

// publicPaths are what an anonymous client may read.
var publicPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true, "/version": true}

// User is an authenticated client.
type User struct {
	Name   string
	UID    string
	Groups []string
	// Extra holds what else the authenticator knows (a service account token's pod).
	Extra map[string][]string
}

// AllAuthenticated is the group every authenticated user is in, as in Kubernetes; an
// impersonated user is put in it too.
const AllAuthenticated = "system:authenticated"

// Info is u as k8s.io/apiserver's authorizers see users.
func (u User) Info() user.Info {
	return &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

type userKey struct{}

// WithUser returns ctx carrying u (for handlers called outside Authenticate, and tests).
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// TokenAuthenticator checks a bearer token other than the static ones (service account
// tokens): ok is false for a token it does not recognise, err for one it rejects.
type TokenAuthenticator func(ctx context.Context, token string) (u User, ok bool, err error)

// UserFrom returns the authenticated user of a request.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

// Tokens maps bearer tokens to users.
type Tokens map[string]User

// LoadTokenFile reads a static token file in Kubernetes' format: one
// `token,user,uid[,"group1,group2"]` line per token.
func LoadTokenFile(path string) (Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	tokens := Tokens{}
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return tokens, nil
		}
		if err != nil {
			return nil, fmt.Errorf("token file %s: %w", path, err)
		}
		if len(rec) < 3 || rec[0] == "" || rec[1] == "" {
			return nil, fmt.Errorf("token file %s line %d: want token,user,uid[,\"groups\"]", path, line)
		}
		u := User{Name: rec[1], UID: rec[2]}
		if len(rec) > 3 && rec[3] != "" {
			for _, g := range strings.Split(rec[3], ",") {
				u.Groups = append(u.Groups, strings.TrimSpace(g))
			}
		}
		tokens[rec[0]] = u
	}
}

func (t Tokens) lookup(header string) (User, bool) {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || token == "" {
		return User{}, false
	}
	u, ok, _ := t.Authenticate(context.Background(), token)
	return u, ok
}

// Authenticate is the static tokens as a TokenAuthenticator (for TokenReview).
func (t Tokens) Authenticate(_ context.Context, token string) (User, bool, error) {
	for known, u := range t {
		if subtle.ConstantTimeCompare([]byte(known), []byte(token)) == 1 {
			return u, true, nil
		}
	}
	return User{}, false, nil
}

// Authenticate wraps h: a verified client certificate names the user (CN) and groups (O),
// as in Kubernetes' x509 authenticator; else a known bearer token does (static, then
// each of more); anonymous requests reach only the public paths, and a wrong token is
// refused even there.
func Authenticate(h http.Handler, tokens Tokens, more ...TokenAuthenticator) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := User{}, false
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
			cert := r.TLS.VerifiedChains[0][0]
			u, ok = User{Name: cert.Subject.CommonName, Groups: cert.Subject.Organization}, true
		} else if auth := r.Header.Get("Authorization"); auth != "" {
			if u, ok = tokens.lookup(auth); !ok {
				u, ok = bearer(r, auth, more)
			}
			if !ok {
				responsewriters.WriteError(w, apierrors.NewUnauthorized("Unauthorized"))
				return
			}
		}
		if ok {
			u.Groups = append(append([]string(nil), u.Groups...), AllAuthenticated)
			h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
			return
		}
		if publicPaths[r.URL.Path] {
			h.ServeHTTP(w, r)
			return
		}
		responsewriters.WriteError(w, apierrors.NewUnauthorized("Unauthorized"))
	})
}

func bearer(r *http.Request, header string, authenticators []TokenAuthenticator) (User, bool) {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || token == "" {
		return User{}, false
	}
	for _, authn := range authenticators {
		u, ok, err := authn(r.Context(), token)
		if err != nil {
			slog.Debug("bearer token rejected", "remote", r.RemoteAddr, "err", err)
			return User{}, false
		}
		if ok {
			return u, true
		}
	}
	return User{}, false
}
