package auth

import (
	"context"
	"net/http"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/apiserver"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Reviews serves the access reviews of authorization.k8s.io/v1 (SelfSubjectAccessReview,
// SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectRulesReview) and
// authentication.k8s.io/v1 SelfSubjectReview and TokenReview: `kubectl auth can-i`,
// `kubectl auth whoami` and delegated authentication.
// The request itself has been authenticated and authorized (create on the review).
type Reviews struct {
	Authorizer authorizer.Authorizer
	Rules      authorizer.RuleResolver // nil: rules reviews answer incomplete
	Tokens     *TokenReviewer          // nil: TokenReview is not served
}

// Extensions are the reviews' API groups as the API server lists them in discovery
// (kube-apiserver's authorization.k8s.io/v1 and authentication.k8s.io/v1).
func (rv *Reviews) Extensions() []apiserver.Extension {
	create := metav1.Verbs{"create"}
	authn := []metav1.APIResource{{Name: "selfsubjectreviews", SingularName: "selfsubjectreview", Kind: ssrKind.Kind, Verbs: create}}
	if rv.Tokens != nil {
		authn = append(authn, metav1.APIResource{Name: "tokenreviews", SingularName: "tokenreview", Kind: trKind.Kind, Verbs: create})
	}
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !rv.Match(w, r) {
			responsewriters.WriteError(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path)) // as for any path the server does not know
		}
	})
	return []apiserver.Extension{
		{GroupVersion: authzv1.SchemeGroupVersion, Handler: serve, Resources: []metav1.APIResource{
			{Name: "localsubjectaccessreviews", SingularName: "localsubjectaccessreview", Namespaced: true, Kind: lsarKind.Kind, Verbs: create},
			{Name: "selfsubjectaccessreviews", SingularName: "selfsubjectaccessreview", Kind: ssarKind.Kind, Verbs: create},
			{Name: "selfsubjectrulesreviews", SingularName: "selfsubjectrulesreview", Kind: ssrrKind.Kind, Verbs: create},
			{Name: "subjectaccessreviews", SingularName: "subjectaccessreview", Kind: sarKind.Kind, Verbs: create},
		}},
		{GroupVersion: authnv1.SchemeGroupVersion, Handler: serve, Resources: authn},
	}
}

// Match tells whether r is one of the reviews, and serves it.
func (rv *Reviews) Match(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	var serve func(http.ResponseWriter, *http.Request, authn.User, string)
	ns := ""
	switch {
	case p == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews":
		serve = rv.selfSubjectAccessReview
	case p == "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		serve = rv.subjectAccessReview
	case p == "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews":
		serve = rv.selfSubjectRulesReview
	case p == "/apis/authentication.k8s.io/v1/selfsubjectreviews":
		serve = rv.selfSubjectReview
	case p == "/apis/authentication.k8s.io/v1/tokenreviews" && rv.Tokens != nil:
		serve = rv.tokenReview
	case strings.HasPrefix(p, "/apis/authorization.k8s.io/v1/namespaces/") && strings.HasSuffix(p, "/localsubjectaccessreviews"):
		ns = strings.TrimSuffix(strings.TrimPrefix(p, "/apis/authorization.k8s.io/v1/namespaces/"), "/localsubjectaccessreviews")
		if ns == "" || strings.Contains(ns, "/") {
			return false
		}
		serve = rv.localSubjectAccessReview
	default:
		return false
	}
	if r.Method != http.MethodPost {
		responsewriters.WriteError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: p[strings.LastIndex(p, "/")+1:]}, r.Method))
		return true
	}
	u, ok := authn.UserFrom(r.Context())
	if !ok {
		responsewriters.WriteError(w, apierrors.NewUnauthorized("Unauthorized"))
		return true
	}
	serve(w, r, u, ns)
	return true
}

var (
	ssarKind = authzv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview")
	sarKind  = authzv1.SchemeGroupVersion.WithKind("SubjectAccessReview")
	lsarKind = authzv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview")
	ssrrKind = authzv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview")
	ssrKind  = authnv1.SchemeGroupVersion.WithKind("SelfSubjectReview")
)

func (rv *Reviews) selfSubjectAccessReview(w http.ResponseWriter, r *http.Request, u authn.User, _ string) {
	var review authzv1.SelfSubjectAccessReview
	if err := apiserver.DecodeBody(r, &review, ssarKind); err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	if errs := validateSpec(review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes, field.NewPath("spec")); len(errs) > 0 {
		responsewriters.WriteError(w, apierrors.NewInvalid(ssarKind.GroupKind(), "", errs))
		return
	}
	review.Status = rv.decide(r.Context(), u.Info(), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
	responsewriters.WriteObject(w, http.StatusCreated, &review, ssarKind)
}

func (rv *Reviews) subjectAccessReview(w http.ResponseWriter, r *http.Request, _ authn.User, _ string) {
	var review authzv1.SubjectAccessReview
	if err := apiserver.DecodeBody(r, &review, sarKind); err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	if errs := validateSAR(&review.Spec, ""); len(errs) > 0 {
		responsewriters.WriteError(w, apierrors.NewInvalid(sarKind.GroupKind(), "", errs))
		return
	}
	review.Status = rv.decide(r.Context(), subjectOf(&review.Spec), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
	responsewriters.WriteObject(w, http.StatusCreated, &review, sarKind)
}

func (rv *Reviews) localSubjectAccessReview(w http.ResponseWriter, r *http.Request, _ authn.User, ns string) {
	var review authzv1.LocalSubjectAccessReview
	if err := apiserver.DecodeBody(r, &review, lsarKind); err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	if review.Namespace == "" {
		review.Namespace = ns
	}
	errs := validateSAR(&review.Spec, ns)
	if review.Namespace != ns {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), review.Namespace, "must match the namespace of the request"))
	}
	if len(errs) > 0 {
		responsewriters.WriteError(w, apierrors.NewInvalid(lsarKind.GroupKind(), "", errs))
		return
	}
	review.Status = rv.decide(r.Context(), subjectOf(&review.Spec), review.Spec.ResourceAttributes, nil)
	responsewriters.WriteObject(w, http.StatusCreated, &review, lsarKind)
}

func subjectOf(spec *authzv1.SubjectAccessReviewSpec) user.Info {
	extra := map[string][]string{}
	for k, v := range spec.Extra {
		extra[k] = v
	}
	return &user.DefaultInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups, Extra: extra}
}

func validateSAR(spec *authzv1.SubjectAccessReviewSpec, ns string) field.ErrorList {
	path := field.NewPath("spec")
	errs := validateSpec(spec.ResourceAttributes, spec.NonResourceAttributes, path)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(path.Child("user"), spec.User, `at least one of user or group must be specified`))
	}
	if ns != "" {
		if spec.NonResourceAttributes != nil {
			errs = append(errs, field.Invalid(path.Child("nonResourceAttributes"), spec.NonResourceAttributes, "disallowed on this kind of request"))
		}
		if spec.ResourceAttributes != nil && spec.ResourceAttributes.Namespace != ns {
			errs = append(errs, field.Invalid(path.Child("resourceAttributes", "namespace"), spec.ResourceAttributes.Namespace, "must match metadata.namespace"))
		}
	}
	return errs
}

func validateSpec(res *authzv1.ResourceAttributes, nonRes *authzv1.NonResourceAttributes, path *field.Path) field.ErrorList {
	switch {
	case res != nil && nonRes != nil:
		return field.ErrorList{field.Invalid(path.Child("nonResourceAttributes"), nonRes, `cannot be specified in combination with resourceAttributes`)}
	case res == nil && nonRes == nil:
		return field.ErrorList{field.Invalid(path.Child("resourceAttributes"), res, `exactly one of nonResourceAttributes or resourceAttributes must be specified`)}
	}
	return nil
}

// decide asks the authorizer about the attributes of a review.
func (rv *Reviews) decide(ctx context.Context, u user.Info, res *authzv1.ResourceAttributes, nonRes *authzv1.NonResourceAttributes) authzv1.SubjectAccessReviewStatus {
	a := authorizer.AttributesRecord{User: u}
	if res != nil {
		a.Verb, a.Namespace, a.APIGroup, a.APIVersion = res.Verb, res.Namespace, res.Group, res.Version
		a.Resource, a.Subresource, a.Name, a.ResourceRequest = res.Resource, res.Subresource, res.Name, true
		if fs := res.FieldSelector; fs != nil && fs.RawSelector != "" {
			if sel, err := fields.ParseSelector(fs.RawSelector); err == nil {
				a.FieldSelectorRequirements = sel.Requirements()
			} else {
				a.FieldSelectorParsingErr = err
			}
		}
		if ls := res.LabelSelector; ls != nil && ls.RawSelector != "" {
			if sel, err := labels.Parse(ls.RawSelector); err == nil {
				a.LabelSelectorRequirements, _ = sel.Requirements()
			} else {
				a.LabelSelectorParsingErr = err
			}
		}
	} else {
		a.Verb, a.Path = nonRes.Verb, nonRes.Path
	}
	decision, reason, err := rv.Authorizer.Authorize(ctx, a)
	st := authzv1.SubjectAccessReviewStatus{Allowed: decision == authorizer.DecisionAllow, Denied: decision == authorizer.DecisionDeny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

func (rv *Reviews) selfSubjectRulesReview(w http.ResponseWriter, r *http.Request, u authn.User, _ string) {
	var review authzv1.SelfSubjectRulesReview
	if err := apiserver.DecodeBody(r, &review, ssrrKind); err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	if review.Spec.Namespace == "" {
		responsewriters.WriteError(w, apierrors.NewBadRequest("no namespace on request"))
		return
	}
	review.Status = rulesStatus(r.Context(), rv.Rules, u.Info(), review.Spec.Namespace)
	responsewriters.WriteObject(w, http.StatusCreated, &review, ssrrKind)
}

// rulesStatus lists what u may do in namespace as its RBAC rules say (system:masters's
// come from the cluster-admin binding, as in Kubernetes).
func rulesStatus(ctx context.Context, rules authorizer.RuleResolver, u user.Info, namespace string) authzv1.SubjectRulesReviewStatus {
	var st authzv1.SubjectRulesReviewStatus
	if rules == nil {
		st.Incomplete = true
		return st
	}
	res, nonRes, incomplete, err := rules.RulesFor(ctx, u, namespace)
	for _, r := range res {
		st.ResourceRules = append(st.ResourceRules, authzv1.ResourceRule{Verbs: r.GetVerbs(), APIGroups: r.GetAPIGroups(), Resources: r.GetResources(), ResourceNames: r.GetResourceNames()})
	}
	for _, r := range nonRes {
		st.NonResourceRules = append(st.NonResourceRules, authzv1.NonResourceRule{Verbs: r.GetVerbs(), NonResourceURLs: r.GetNonResourceURLs()})
	}
	st.Incomplete = incomplete
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

func (rv *Reviews) selfSubjectReview(w http.ResponseWriter, r *http.Request, u authn.User, _ string) {
	var review authnv1.SelfSubjectReview
	if err := apiserver.DecodeBody(r, &review, ssrKind); err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	review.Status.UserInfo = userInfo(u)
	responsewriters.WriteObject(w, http.StatusCreated, &review, ssrKind)
}

// userInfo is u as authentication.k8s.io's reviews show a user.
func userInfo(u authn.User) authnv1.UserInfo {
	info := authnv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = map[string]authnv1.ExtraValue{}
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	return info
}
