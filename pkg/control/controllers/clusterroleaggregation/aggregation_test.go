package clusterroleaggregation

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// aggregatedRoleFixture is a controller, its informers started, over role "agg" that
// aggregates the roles labelled to-agg, and one of them, "reader", which may get pods.
func aggregatedRoleFixture(t *testing.T) (*fake.Clientset, *Controller, context.Context) {
	read := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	cs := fake.NewClientset(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{
			ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"to-agg": "true"}}}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader", Labels: map[string]string{"to-agg": "true"}}, Rules: []rbacv1.PolicyRule{read}},
	)
	factory := informers.NewSharedInformerFactory(cs, 0)
	c, err := New(cs, factory.Rbac().V1().ClusterRoles(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return cs, c, controllertest.StartInformers(t, factory)
}

// TestSyncFillsAggregatedRoleAndSkipsTheRest: a sync writes the matched roles' rules into an
// aggregated role; a role gone or without an aggregationRule is nothing to do.
func TestSyncFillsAggregatedRoleAndSkipsTheRest(t *testing.T) {
	cs, c, ctx := aggregatedRoleFixture(t)
	for _, name := range []string{"agg", "reader", "gone"} {
		if _, err := c.sync(ctx, name); err != nil {
			t.Errorf("sync(%s): %v", name, err)
		}
	}
	for name, want := range map[string]int{"agg": 1, "reader": 1} {
		got, err := cs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Rules) != want || got.Rules[0].Resources[0] != "pods" {
			t.Errorf("%s's rules: %+v, want %d: the reader's", name, got.Rules, want)
		}
	}
}

// TestAggregateOrdersRulesBySelector: as kube's syncClusterRole, the rules come selector by
// selector (each selector's roles in name order), so a role matched by the first selector
// comes before one matched only by the second whatever their names; a rule comes once.
func TestAggregateOrdersRulesBySelector(t *testing.T) {
	rule := func(resource string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{resource}}
	}
	agg := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{
		ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"first": "true"}}, {MatchLabels: map[string]string{"second": "true"}}}}}
	all := []*rbacv1.ClusterRole{agg,
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"second": "true"}}, Rules: []rbacv1.PolicyRule{rule("pods")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "z", Labels: map[string]string{"first": "true"}}, Rules: []rbacv1.PolicyRule{rule("secrets")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "y", Labels: map[string]string{"first": "true", "second": "true"}}, Rules: []rbacv1.PolicyRule{rule("nodes")}},
	}
	var got []string
	for _, r := range Aggregate(agg, all) {
		got = append(got, r.Resources[0])
	}
	if want := []string{"nodes", "secrets", "pods"}; !slices.Equal(got, want) {
		t.Errorf("aggregated rules' resources: %v, want %v", got, want)
	}
}

// TestSyncAppliesAsKube: the aggregated rules are written by a server-side apply of
// the field manager "clusterrole-aggregation-controller", as kube's applyClusterRoles, so
// the role's managedFields name that manager as the rules' owner.
func TestSyncAppliesAsKube(t *testing.T) {
	cs, c, ctx := aggregatedRoleFixture(t)
	cs.ClearActions()
	if _, err := c.sync(ctx, "agg"); err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, a := range cs.Actions() {
		switch a := a.(type) {
		case k8stesting.PatchActionImpl:
			writes = append(writes, string(a.PatchType)+" by "+a.PatchOptions.FieldManager)
		case k8stesting.UpdateAction:
			writes = append(writes, "update")
		}
	}
	if want := []string{string(types.ApplyPatchType) + " by clusterrole-aggregation-controller"}; !slices.Equal(writes, want) {
		t.Errorf("writes: %v, want %v", writes, want)
	}
	got, err := cs.RbacV1().ClusterRoles().Get(ctx, "agg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rules) != 1 || got.Rules[0].Resources[0] != "pods" || got.AggregationRule == nil {
		t.Errorf("agg after the apply: rules %+v, aggregationRule %+v", got.Rules, got.AggregationRule)
	}
}
