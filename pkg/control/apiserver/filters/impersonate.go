package filters

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// impersonate applies the Impersonate-* headers (kubectl --as, --as-group, --as-uid) as
// kube-apiserver does: the real user must be allowed the verb "impersonate" on each
// users / groups / serviceaccounts / uids / userextras asked for; the request then runs
// as the impersonated user. ok is false when r has no such headers.
func impersonate(ctx context.Context, r *http.Request, real authn.User, az authorizer.Authorizer) (authn.User, bool, error) {
	name := r.Header.Get(authnv1.ImpersonateUserHeader)
	groups := r.Header.Values(authnv1.ImpersonateGroupHeader)
	uid := r.Header.Get(authnv1.ImpersonateUIDHeader)
	extra := map[string][]string{}
	for h, v := range r.Header {
		if key, ok := strings.CutPrefix(h, authnv1.ImpersonateUserExtraHeaderPrefix); ok {
			k, err := url.PathUnescape(strings.ToLower(key))
			if err != nil {
				return authn.User{}, true, apierrors.NewBadRequest(fmt.Sprintf("malformed %s header %q", authnv1.ImpersonateUserExtraHeaderPrefix, h))
			}
			extra[k] = v
		}
	}
	if name == "" {
		if len(groups) > 0 || uid != "" || len(extra) > 0 {
			return authn.User{}, true, apierrors.NewBadRequest("requested impersonation of groups, uid or extra without impersonating a user")
		}
		return authn.User{}, false, nil
	}
	check := func(group, resource, subresource, namespace, obj string) error {
		a := authorizer.AttributesRecord{User: real.Info(), Verb: "impersonate", APIGroup: group, Resource: resource,
			Subresource: subresource, Namespace: namespace, Name: obj, ResourceRequest: true}
		if d, reason, _ := az.Authorize(ctx, a); d != authorizer.DecisionAllow {
			return Forbidden(a, reason)
		}
		return nil
	}
	u := authn.User{Name: name, UID: uid, Groups: groups}
	var errs []error
	if ns, sa, err := serviceaccount.SplitUsername(name); err == nil {
		errs = append(errs, check("", "serviceaccounts", "", ns, sa))
		if len(groups) == 0 {
			u.Groups = serviceaccount.MakeGroupNames(ns)
		}
	} else {
		errs = append(errs, check("", "users", "", "", name))
	}
	for _, g := range groups {
		errs = append(errs, check("", "groups", "", "", g))
	}
	if uid != "" {
		errs = append(errs, check(authnv1.GroupName, "uids", "", "", uid))
	}
	for k, vs := range extra {
		for _, v := range vs {
			errs = append(errs, check(authnv1.GroupName, "userextras", k, "", v))
		}
	}
	for _, err := range errs {
		if err != nil {
			return authn.User{}, true, err
		}
	}
	if len(extra) > 0 {
		u.Extra = extra
	}
	if !slices.Contains(u.Groups, authn.AllAuthenticated) {
		u.Groups = append(u.Groups, authn.AllAuthenticated)
	}
	for h := range r.Header {
		if strings.HasPrefix(h, "Impersonate-") {
			r.Header.Del(h)
		}
	}
	return u, true, nil
}
