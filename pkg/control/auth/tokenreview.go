package auth

import (
	"context"
	"net/http"
	"slices"

	"github.com/minik8s/minik8s/pkg/control/apiserver"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// TokenReviewer answers authentication.k8s.io/v1 TokenReviews (what metrics-server,
// kube-rbac-proxy or Vault ask to learn who a bearer token is) with the API's own token
// authenticators, as kube-apiserver does: a token that names no audience (static,
// bootstrap) is good only for the API's audiences; a service account token for those of
// its audiences the review asks for (the API's when it asks for none).
type TokenReviewer struct {
	APIAudiences []string
	Agnostic     []authn.TokenAuthenticator // tokens without audiences
	Bound        []authn.TokenAuthenticator // tokens that name theirs (ctx's audiences)
}

var trKind = authnv1.SchemeGroupVersion.WithKind("TokenReview")

func (rv *Reviews) tokenReview(w http.ResponseWriter, r *http.Request, _ authn.User, _ string) {
	var review authnv1.TokenReview
	if err := apiserver.DecodeBody(r, &review, trKind); err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	if review.Spec.Token == "" {
		responsewriters.WriteError(w, apierrors.NewBadRequest("token is required for TokenReview in authentication"))
		return
	}
	review.Status = rv.Tokens.review(r.Context(), review.Spec)
	responsewriters.WriteObject(w, http.StatusCreated, &review, trKind)
}

func (tr *TokenReviewer) review(ctx context.Context, spec authnv1.TokenReviewSpec) authnv1.TokenReviewStatus {
	targets := spec.Audiences
	if len(targets) == 0 {
		targets = tr.APIAudiences
	}
	var errs []error
	if auds := authenticator.Audiences(tr.APIAudiences).Intersect(targets); len(auds) > 0 {
		for _, authn := range tr.Agnostic {
			u, ok, err := authn(ctx, spec.Token)
			if err != nil {
				errs = append(errs, err)
			} else if ok {
				return authenticated(u, auds)
			}
		}
	}
	for _, authn := range tr.Bound {
		u, ok, err := authn(authenticator.WithAudiences(ctx, targets), spec.Token)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue
		}
		// The answer names the audiences the token and the review share.
		auds := targets
		if len(targets) > 1 {
			auds = slices.DeleteFunc(slices.Clone(targets), func(a string) bool {
				_, ok, _ := authn(authenticator.WithAudiences(ctx, authenticator.Audiences{a}), spec.Token)
				return !ok
			})
		}
		return authenticated(u, auds)
	}
	var status authnv1.TokenReviewStatus
	if err := utilerrors.NewAggregate(errs); err != nil {
		status.Error = err.Error()
	}
	return status
}

// authenticated is the status of a token that names u, with the group every
// authenticated user is in, as the API's own authentication adds it.
func authenticated(u authn.User, audiences []string) authnv1.TokenReviewStatus {
	if !slices.Contains(u.Groups, user.AllAuthenticated) {
		u.Groups = append(slices.Clone(u.Groups), user.AllAuthenticated)
	}
	return authnv1.TokenReviewStatus{Authenticated: true, User: userInfo(u), Audiences: audiences}
}
