package clusterroleaggregation_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controllers/clusterroleaggregation"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAggregatedRulesAppliedOnMiniapi: against a real miniapi, a role labelled
// aggregate-to-view lands in "view" by a server-side apply, the rules' manager being
// kube's clusterrole-aggregation-controller (Apply), as `kubectl get clusterrole view
// --show-managed-fields` shows on Kubernetes.
func TestAggregatedRulesAppliedOnMiniapi(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	ctx := context.Background()
	roles := cl.Client.RbacV1().ClusterRoles()
	extra := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	if _, err := roles.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "widgets-view",
		Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}}, Rules: []rbacv1.PolicyRule{extra}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "view to hold the widgets rule, applied by the controller", 30*time.Second, func() (bool, string) {
		view, err := roles.Get(ctx, "view", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		has := slices.ContainsFunc(view.Rules, func(r rbacv1.PolicyRule) bool { return slices.Equal(r.Resources, extra.Resources) })
		applied := slices.ContainsFunc(view.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
			return m.Manager == clusterroleaggregation.FieldManager && m.Operation == metav1.ManagedFieldsOperationApply
		})
		return has && applied, "managedFields: " + managers(view.ManagedFields)
	})
}

func managers(entries []metav1.ManagedFieldsEntry) string {
	var out string
	for _, m := range entries {
		out += m.Manager + "/" + string(m.Operation) + " "
	}
	return out
}
