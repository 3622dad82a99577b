package filters

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Attributes are what the authorizer is asked about the request r by u.
func Attributes(r *http.Request, u authn.User) (authorizer.AttributesRecord, error) {
	info, err := RequestInfoOf(r) // what routing reads too
	if err != nil {
		return authorizer.AttributesRecord{}, err
	}
	a := authorizer.AttributesRecord{
		User: u.Info(), Verb: info.Verb, Namespace: info.Namespace, APIGroup: info.APIGroup, APIVersion: info.APIVersion,
		Resource: info.Resource, Subresource: info.Subresource, Name: info.Name, ResourceRequest: info.IsResourceRequest, Path: info.Path,
	}
	if info.IsResourceRequest && (info.Verb == "list" || info.Verb == "watch" || info.Verb == "deletecollection") {
		q := r.URL.Query()
		if s := q.Get("fieldSelector"); s != "" {
			var sel fields.Selector
			if sel, a.FieldSelectorParsingErr = fields.ParseSelector(s); a.FieldSelectorParsingErr == nil {
				a.FieldSelectorRequirements = sel.Requirements()
			}
		}
		if s := q.Get("labelSelector"); s != "" {
			var sel labels.Selector
			if sel, a.LabelSelectorParsingErr = labels.Parse(s); a.LabelSelectorParsingErr == nil {
				a.LabelSelectorRequirements, _ = sel.Requirements()
			}
		}
	}
	return a, nil
}

// Authorize wraps h: an authenticated request impersonating someone (Impersonate-*
// headers) becomes theirs if its user may impersonate them; then it must be allowed by az,
// else it gets 403 Forbidden with kube-apiserver's message. Anonymous requests have already been limited to
// the public paths by authn.Authenticate.
func Authorize(h http.Handler, az authorizer.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := authn.UserFrom(r.Context())
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		if as, ok, err := impersonate(r.Context(), r, u, az); err != nil {
			AuditError(r.Context(), err)
			responsewriters.WriteError(w, err)
			return
		} else if ok {
			u = as
			r = r.WithContext(authn.WithUser(r.Context(), u))
			auditImpersonation(r.Context(), u)
		}
		a, err := Attributes(r, u)
		if err != nil {
			responsewriters.WriteError(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		decision, reason, err := az.Authorize(r.Context(), a)
		auditAuthorization(r.Context(), decision, reason)
		if decision == authorizer.DecisionAllow {
			h.ServeHTTP(w, r)
			return
		}
		if err != nil && reason == "" {
			reason = err.Error()
		}
		err = Forbidden(a, reason)
		AuditError(r.Context(), err)
		responsewriters.WriteError(w, err)
	})
}

// Forbidden is the error kube-apiserver answers a request it does not authorize.
func Forbidden(a authorizer.Attributes, reason string) error {
	msg := forbiddenMessage(a)
	if reason != "" {
		msg += ": " + reason
	}
	if !a.IsResourceRequest() {
		return apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(msg))
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.GetAPIGroup(), Resource: a.GetResource()}, a.GetName(), errors.New(msg))
}

func forbiddenMessage(a authorizer.Attributes) string {
	name := ""
	if u := a.GetUser(); u != nil {
		name = u.GetName()
	}
	if !a.IsResourceRequest() {
		return fmt.Sprintf("User %q cannot %s path %q", name, a.GetVerb(), a.GetPath())
	}
	resource := a.GetResource()
	if sub := a.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	if ns := a.GetNamespace(); ns != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, a.GetVerb(), resource, a.GetAPIGroup(), ns)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, a.GetVerb(), resource, a.GetAPIGroup())
}
