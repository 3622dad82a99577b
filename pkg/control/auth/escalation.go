package auth

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// Escalation prevents privilege escalation through RBAC objects, as kube-apiserver's RBAC
// storage does: a user may write a Role or ClusterRole only with rules it already holds
// (or with the `escalate` verb on it), and a binding only to a role whose rules it holds
// (or with the `bind` verb on that role). system:masters may do anything.
type Escalation struct {
	rbac  *RBAC
	authz authorizer.Authorizer
}

// NewEscalation checks writes against r's rules; az answers the escalate and bind checks.
func NewEscalation(r *RBAC, az authorizer.Authorizer) *Escalation {
	return &Escalation{rbac: r, authz: az}
}

var rbacGroup = rbacv1.GroupName

// Check is an apiserver.WriteGuard.
func (e *Escalation) Check(ctx context.Context, gr schema.GroupResource, obj, old runtime.Object) error {
	if gr.Group != rbacGroup {
		return nil
	}
	u, ok := authn.UserFrom(ctx)
	if !ok || slices.Contains(u.Groups, user.SystemPrivilegedGroup) {
		return nil
	}
	info := u.Info()
	switch o := obj.(type) {
	case *rbacv1.Role:
		if prev, ok := old.(*rbacv1.Role); ok && equality.Semantic.DeepEqual(prev.Rules, o.Rules) {
			return nil
		}
		return e.checkRole(ctx, info, gr, o.Namespace, o.Name, o.Rules, false)
	case *rbacv1.ClusterRole:
		if prev, ok := old.(*rbacv1.ClusterRole); ok && equality.Semantic.DeepEqual(prev.Rules, o.Rules) &&
			equality.Semantic.DeepEqual(prev.AggregationRule, o.AggregationRule) {
			return nil
		}
		return e.checkRole(ctx, info, gr, "", o.Name, o.Rules, o.AggregationRule != nil)
	case *rbacv1.RoleBinding:
		return e.checkBinding(ctx, info, gr, o.Namespace, o.Name, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return e.checkBinding(ctx, info, gr, "", o.Name, o.RoleRef)
	}
	return nil
}

func (e *Escalation) allowed(ctx context.Context, u user.Info, verb, resource, namespace, name string) bool {
	d, _, _ := e.authz.Authorize(ctx, authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: rbacGroup, APIVersion: "v1",
		Resource: resource, Namespace: namespace, Name: name, ResourceRequest: true})
	return d == authorizer.DecisionAllow
}

func (e *Escalation) checkRole(ctx context.Context, u user.Info, gr schema.GroupResource, ns, name string, rules []rbacv1.PolicyRule, aggregated bool) error {
	if e.allowed(ctx, u, "escalate", gr.Resource, ns, name) {
		return nil
	}
	if aggregated { // the aggregation controller fills its rules: only escalate may set one
		return apierrors.NewForbidden(gr, name, fmt.Errorf("must have cluster-admin privileges to use the aggregationRule"))
	}
	return e.confirmNoEscalation(u, gr, ns, name, rules)
}

func (e *Escalation) checkBinding(ctx context.Context, u user.Info, gr schema.GroupResource, ns, name string, ref rbacv1.RoleRef) error {
	roleResource := "clusterroles"
	if ref.Kind == "Role" {
		roleResource = "roles"
	}
	if ref.APIGroup == rbacGroup && e.allowed(ctx, u, "bind", roleResource, ns, ref.Name) {
		return nil
	}
	rules, err := e.rbac.roleRules(ref, ns)
	if err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return e.confirmNoEscalation(u, gr, ns, name, rules)
}

// confirmNoEscalation: every rule granted must be covered by the user's own RBAC rules
// in that namespace (cluster-wide ones for cluster objects).
func (e *Escalation) confirmNoEscalation(u user.Info, gr schema.GroupResource, ns, name string, rules []rbacv1.PolicyRule) error {
	var owner []rbacv1.PolicyRule
	var resolveErr error
	e.rbac.visitRules(u, ns, func(_ string, r *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			resolveErr = err
		} else {
			owner = append(owner, *r)
		}
		return true
	})
	covered, missing := validation.Covers(owner, rules)
	if covered {
		return nil
	}
	lines := sets.New[string]()
	for _, r := range compactRules(missing) {
		lines.Insert(compactRule(r))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		u.GetName(), u.GetGroups(), strings.Join(sets.List(lines), "\n"))
	if resolveErr != nil {
		fmt.Fprintf(&b, "; resolution errors: %v", resolveErr)
	}
	return apierrors.NewForbidden(gr, name, fmt.Errorf("%s", b.String()))
}

// compactRules merges the verbs of rules naming one group, one resource and at most one
// resource name, as kube-apiserver's CompactRules before it lists missing rights.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type simple struct{ group, resource, name string }
	var out []rbacv1.PolicyRule
	merged := map[simple]*rbacv1.PolicyRule{}
	var order []simple
	for _, r := range rules {
		if len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 {
			out = append(out, r)
			continue
		}
		key := simple{group: r.APIGroups[0], resource: r.Resources[0]}
		if len(r.ResourceNames) == 1 {
			key.name = "/" + r.ResourceNames[0]
		}
		if m, ok := merged[key]; ok {
			m.Verbs = append(m.Verbs, r.Verbs...)
			continue
		}
		merged[key] = r.DeepCopy()
		order = append(order, key)
	}
	for _, k := range order {
		out = append(out, *merged[k])
	}
	return out
}

// compactRule prints a rule as kube-apiserver's escalation message does (rbacv1helpers.CompactString).
func compactRule(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(field string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", field, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
