// Package auth decides who may do what: RBAC as Kubernetes evaluates it, the Node
// authorizer, the bootstrap policy, and the union of them that --authorization-mode names.
package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
)

// RBACLister is what the RBAC authorizer reads: client-go listers over informers.
type RBACLister struct {
	Roles               rbaclisters.RoleLister
	RoleBindings        rbaclisters.RoleBindingLister
	ClusterRoles        rbaclisters.ClusterRoleLister
	ClusterRoleBindings rbaclisters.ClusterRoleBindingLister
}

// RBAC authorizes requests by the rules of the roles bound to their user, as
// kube-apiserver's RBAC authorizer does: an allow from any rule allows, otherwise it has
// no opinion (RBAC never denies).
type RBAC struct {
	authorizer.AuthorizerFunc
	l RBACLister
}

// NewRBAC makes the RBAC authorizer over l.
func NewRBAC(l RBACLister) *RBAC {
	r := &RBAC{l: l}
	r.AuthorizerFunc = r.authorize
	return r
}

func (r *RBAC) authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	allowed := false
	var errs []error
	r.visitRules(a.GetUser(), a.GetNamespace(), func(source string, rule *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
			return true
		}
		if RuleAllows(a, rule) {
			allowed = true
			return false
		}
		return true
	})
	if allowed {
		return authorizer.DecisionAllow, "", nil
	}
	// Errors (a binding naming a role that does not exist) deny nothing: they only
	// explain why nothing allowed the request, as kube-apiserver's reason does.
	reason := ""
	if len(errs) > 0 {
		reason = "RBAC: " + errors.Join(errs...).Error()
	}
	return authorizer.DecisionNoOpinion, reason, nil
}

// RulesFor lists the rules that apply to u in namespace (for SelfSubjectRulesReview).
func (r *RBAC) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	var res []authorizer.ResourceRuleInfo
	var nonRes []authorizer.NonResourceRuleInfo
	var firstErr error
	r.visitRules(u, namespace, func(_ string, rule *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return true
		}
		if len(rule.Resources) > 0 {
			res = append(res, &authorizer.DefaultResourceRuleInfo{Verbs: rule.Verbs, APIGroups: rule.APIGroups, Resources: rule.Resources, ResourceNames: rule.ResourceNames})
		}
		if len(rule.NonResourceURLs) > 0 {
			nonRes = append(nonRes, &authorizer.DefaultNonResourceRuleInfo{Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs})
		}
		return true
	})
	return res, nonRes, firstErr != nil, firstErr
}

// visitRules calls visit with every rule bound to u: cluster-wide through
// ClusterRoleBindings, then in namespace through its RoleBindings. visit returns false
// to stop.
func (r *RBAC) visitRules(u user.Info, namespace string, visit func(source string, rule *rbacv1.PolicyRule, err error) bool) {
	if u == nil {
		return
	}
	crbs, err := r.l.ClusterRoleBindings.List(labels.Everything())
	if err != nil && !visit("", nil, err) {
		return
	}
	for _, b := range crbs {
		if !appliesTo(u, b.Subjects, "") {
			continue
		}
		rules, err := r.roleRules(b.RoleRef, "")
		if err != nil {
			if !visit("", nil, fmt.Errorf("clusterrolebinding %s: %w", b.Name, err)) {
				return
			}
			continue
		}
		for i := range rules {
			if !visit("ClusterRoleBinding "+b.Name, &rules[i], nil) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	rbs, err := r.l.RoleBindings.RoleBindings(namespace).List(labels.Everything())
	if err != nil && !visit("", nil, err) {
		return
	}
	for _, b := range rbs {
		if !appliesTo(u, b.Subjects, namespace) {
			continue
		}
		rules, err := r.roleRules(b.RoleRef, namespace)
		if err != nil {
			if !visit("", nil, fmt.Errorf("rolebinding %s/%s: %w", namespace, b.Name, err)) {
				return
			}
			continue
		}
		for i := range rules {
			if !visit("RoleBinding "+namespace+"/"+b.Name, &rules[i], nil) {
				return
			}
		}
	}
}

func (r *RBAC) roleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "ClusterRole":
		role, err := r.l.ClusterRoles.Get(ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	case "Role":
		if namespace == "" {
			return nil, fmt.Errorf("a ClusterRoleBinding cannot refer to Role %q", ref.Name)
		}
		role, err := r.l.Roles.Roles(namespace).Get(ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	}
	return nil, fmt.Errorf("unsupported role reference kind %q", ref.Kind)
}

// appliesTo tells whether one of subjects is u; bindingNamespace is where a RoleBinding
// lives (the default namespace of its ServiceAccount subjects), "" for cluster bindings.
func appliesTo(u user.Info, subjects []rbacv1.Subject, bindingNamespace string) bool {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if u.GetName() == s.Name {
				return true
			}
		case rbacv1.GroupKind:
			for _, g := range u.GetGroups() {
				if g == s.Name {
					return true
				}
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			if ns != "" && serviceaccount.MatchesUsername(ns, s.Name, u.GetName()) {
				return true
			}
		}
	}
	return false
}

// RuleAllows tells whether rule grants the request a.
func RuleAllows(a authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !matches(rule.Verbs, a.GetVerb()) {
		return false
	}
	if !a.IsResourceRequest() {
		return nonResourceURLMatches(rule.NonResourceURLs, a.GetPath())
	}
	return matches(rule.APIGroups, a.GetAPIGroup()) &&
		resourceMatches(rule.Resources, a.GetResource(), a.GetSubresource()) &&
		(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, a.GetName()))
}

// matches: the list holds the value or "*".
func matches(list []string, v string) bool {
	for _, x := range list {
		if x == rbacv1.VerbAll || x == v {
			return true
		}
	}
	return false
}

// resourceMatches: "*" is every resource and subresource, "pods/log" one subresource,
// "*/scale" that subresource of every resource; "pods" alone does not cover its
// subresources.
func resourceMatches(list []string, resource, subresource string) bool {
	want := resource
	if subresource != "" {
		want = resource + "/" + subresource
	}
	for _, x := range list {
		switch {
		case x == rbacv1.ResourceAll, x == want:
			return true
		case subresource != "" && x == "*/"+subresource:
			return true
		}
	}
	return false
}

// nonResourceURLMatches: exact paths, "*", or a prefix ending in "*".
func nonResourceURLMatches(list []string, path string) bool {
	for _, x := range list {
		switch {
		case x == rbacv1.NonResourceAll, x == path:
			return true
		case strings.HasSuffix(x, "*") && strings.HasPrefix(path, strings.TrimSuffix(x, "*")):
			return true
		}
	}
	return false
}
