package auth

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestEscalation(t *testing.T) {
	binder := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "binder"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"cluster-admin"}},
		{Verbs: []string{"escalate"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}}}}
	r := rbacFrom(t,
		roleBinding("apps", "a", "ClusterRole", "admin", userSubject("ada")),
		roleBinding("apps", "b", "ClusterRole", "binder", userSubject("bo")),
		binder)
	e := NewEscalation(r, r)
	as := func(name string, groups ...string) context.Context {
		return authn.WithUser(context.Background(), authn.User{Name: name, Groups: append(groups, "system:authenticated")})
	}
	role := func(ns string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"}, Rules: rules}
	}
	podsRead := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	nodesRead := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"nodes"}}
	gr := func(res string) schema.GroupResource {
		return schema.GroupResource{Group: rbacv1.GroupName, Resource: res}
	}
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		res      string
		obj, old runtime.Object
		allowed  bool
	}{
		{"a role with rules one holds", as("ada"), "roles", role("apps", podsRead), nil, true},
		{"a role with rules one lacks", as("ada"), "roles", role("apps", podsRead, nodesRead), nil, false},
		{"the same role elsewhere", as("ada"), "roles", role("other", podsRead), nil, false},
		// admin holds the extensions group's rules as kube's does, so an old chart's role
		// naming it is not an escalation.
		{"a role with the extensions group", as("ada"), "roles", role("apps", rbacv1.PolicyRule{Verbs: []string{"get", "create"},
			APIGroups: []string{"extensions"}, Resources: []string{"deployments", "ingresses"}}), nil, true},
		{"an update leaving the rules alone", as("ada"), "roles", role("apps", nodesRead), role("apps", nodesRead), true},
		{"escalate verb", as("bo"), "roles", role("apps", nodesRead), nil, true},
		{"system:masters", as("root", "system:masters"), "roles", role("apps", nodesRead), nil, true},
		{"binding to a role one holds", as("ada"), "rolebindings", roleBinding("apps", "x", "ClusterRole", "view", userSubject("eve")), nil, true},
		{"binding to cluster-admin", as("ada"), "rolebindings", roleBinding("apps", "x", "ClusterRole", "cluster-admin", userSubject("ada")), nil, false},
		{"bind verb on cluster-admin", as("bo"), "rolebindings", roleBinding("apps", "x", "ClusterRole", "cluster-admin", userSubject("eve")), nil, true},
		{"binding to a missing role", as("ada"), "rolebindings", roleBinding("apps", "x", "Role", "nope", userSubject("eve")), nil, false},
		{"a cluster role", as("ada"), "clusterroles", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Rules: []rbacv1.PolicyRule{podsRead}}, nil, false},
		{"an aggregated cluster role", as("ada"), "clusterroles", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "c"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}}}, nil, false},
		{"a cluster role binding to view", as("ada"), "clusterrolebindings", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "c"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}, nil, false},
	} {
		err := e.Check(tc.ctx, gr(tc.res), tc.obj, tc.old)
		if (err == nil) != tc.allowed {
			t.Errorf("%s: err = %v, want allowed=%v", tc.name, err, tc.allowed)
		}
		if err != nil && !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v is not Forbidden", tc.name, err)
		}
	}
	err := e.Check(as("ada"), gr("roles"), role("apps", nodesRead), nil)
	if err == nil ||
		err.Error() != `roles.rbac.authorization.k8s.io "r" is forbidden: user "ada" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`+"\n"+`{APIGroups:[""], Resources:["nodes"], Verbs:["list"]}` {
		t.Errorf("message: %v", err)
	}
}

// TestEscalationMessageCompacted: the missing rules are listed as kube-apiserver lists them:
// one line per resource with its verbs merged (CompactRules), the lines sorted, the fields
// in CompactString's order.
func TestEscalationMessageCompacted(t *testing.T) {
	r := rbacFrom(t)
	e := NewEscalation(r, r)
	ctx := authn.WithUser(context.Background(), authn.User{Name: "eve", Groups: []string{"system:authenticated"}})
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "r"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list"}, APIGroups: []string{"apps", ""}, Resources: []string{"pods", "deployments"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"s1"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/logs"}},
	}}
	err := e.Check(ctx, schema.GroupResource{Group: rbacv1.GroupName, Resource: "roles"}, role, nil)
	want := `roles.rbac.authorization.k8s.io "r" is forbidden: user "eve" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["deployments"], Verbs:["get" "list"]}
{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}
{APIGroups:[""], Resources:["secrets"], ResourceNames:["s1"], Verbs:["get"]}
{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}
{APIGroups:["apps"], Resources:["pods"], Verbs:["get" "list"]}
{NonResourceURLs:["/logs"], Verbs:["get"]}`
	if err == nil || err.Error() != want {
		t.Errorf("message:\n%v\nwant:\n%s", err, want)
	}
}
