package rbac

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRBACRules(t *testing.T) {
	role := &rbacv1.Role{ObjectMeta: registrytest.ObjMeta("reader"), Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}}
	registrytest.ExpectErrors(t, "rule without verbs", registrytest.CreateSteps(RoleRules, role), "rules[0].verbs: FieldValueRequired")
	b := &rbacv1.RoleBinding{ObjectMeta: registrytest.ObjMeta("b"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}, {Kind: "Robot", Name: "r2"}}}
	registrytest.ExpectErrors(t, "unknown subject kind", registrytest.CreateSteps(RoleBindingRules, b), "subjects[1].kind: FieldValueNotSupported")
	b.Subjects = b.Subjects[:1]
	changed := b.DeepCopy()
	changed.RoleRef.Name = "admin"
	// kube-apiserver prints the value of its internal RoleRef: Go field names.
	registrytest.ExpectMessages(t, "new roleRef", registrytest.UpdateSteps(RoleBindingRules, changed, b),
		`roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"admin"}: cannot change roleRef`)
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"}}
	registrytest.ExpectErrors(t, "cluster binding to a role", registrytest.CreateSteps(ClusterRoleBindingRules, crb), "roleRef.kind: FieldValueNotSupported")
	if row := RoleBindingRules.Table.Row(b); row[1] != "Role/reader" || row[3] != "alice" {
		t.Errorf("binding row: %v", row)
	}
	// Kubernetes' rbac/v1 defaults: the roleRef's group, and a User's or Group's (the webhook
	// conformance tests bind a role with neither).
	bare := &rbacv1.RoleBinding{ObjectMeta: registrytest.ObjMeta("bare"), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "g"}, {Kind: rbacv1.ServiceAccountKind, Name: "sa", Namespace: "ns"}}}
	bareCluster := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bare"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}}}
	registrytest.ExpectErrors(t, "binding without groups", registrytest.CreateSteps(RoleBindingRules, bare))
	registrytest.ExpectErrors(t, "cluster binding without groups", registrytest.CreateSteps(ClusterRoleBindingRules, bareCluster))
	if bare.RoleRef.APIGroup != rbacv1.GroupName || bare.Subjects[0].APIGroup != rbacv1.GroupName || bare.Subjects[1].APIGroup != "" ||
		bareCluster.RoleRef.APIGroup != rbacv1.GroupName || bareCluster.Subjects[0].APIGroup != rbacv1.GroupName {
		t.Errorf("defaulted groups: %+v %+v, %+v %+v", bare.RoleRef, bare.Subjects, bareCluster.RoleRef, bareCluster.Subjects)
	}
}

// TestRBACRoleRules: kube-apiserver's ValidateRole and ValidateClusterRole: a Role's rules
// may not name non-resource URLs; a ClusterRole's rules are checked with an
// aggregationRule too, which needs a valid selector or more.
func TestRBACRoleRules(t *testing.T) {
	urls := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}
	role := &rbacv1.Role{ObjectMeta: registrytest.ObjMeta("urls"), Rules: []rbacv1.PolicyRule{urls}}
	registrytest.ExpectErrors(t, "a Role naming a non-resource URL", registrytest.CreateSteps(RoleRules, role), "rules[0].nonResourceURLs: FieldValueInvalid")
	clusterRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "urls"}, Rules: []rbacv1.PolicyRule{urls}}
	registrytest.ExpectErrors(t, "a ClusterRole naming a non-resource URL", registrytest.CreateSteps(ClusterRoleRules, clusterRole))
	aggregated := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}}
	registrytest.ExpectErrors(t, "an aggregated ClusterRole", registrytest.CreateSteps(ClusterRoleRules, aggregated),
		"rules[0].verbs: FieldValueRequired", "aggregationRule.clusterRoleSelectors: FieldValueRequired")
	aggregated.Rules = nil
	aggregated.AggregationRule.ClusterRoleSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"a/b/c": "x"}}}
	registrytest.ExpectErrors(t, "an aggregated ClusterRole with a bad selector", registrytest.CreateSteps(ClusterRoleRules, aggregated),
		"aggregationRule.clusterRoleSelectors[0].matchLabels: FieldValueInvalid")
}

// TestBindingSubjectsAsKube: kube-apiserver v1.36.3's answers: the roleRef's name and a
// ServiceAccount subject's name are checked, and a ClusterRoleBinding's ServiceAccount
// needs its namespace (a RoleBinding's is its own).
func TestBindingSubjectsAsKube(t *testing.T) {
	sas := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "Bad_SA"}, {Kind: rbacv1.ServiceAccountKind, Name: "x", APIGroup: rbacv1.GroupName}}
	rb := &rbacv1.RoleBinding{ObjectMeta: registrytest.ObjMeta("rb"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "a/b"}, Subjects: sas}
	registrytest.ExpectMessages(t, "role binding", registrytest.CreateSteps(RoleBindingRules, rb),
		`roleRef.name: Invalid value: "a/b": may not contain '/'`,
		`subjects[0].name: Invalid value: "Bad_SA": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		`subjects[1].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: ""`)
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crb"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "a"}, {Kind: rbacv1.ServiceAccountKind, Name: "b", Namespace: "ns"}}}
	registrytest.ExpectMessages(t, "cluster role binding", registrytest.CreateSteps(ClusterRoleBindingRules, crb),
		`subjects[0].namespace: Required value`)
}
