package clusterroleaggregation

import (
	"io"
	"log/slog"
	"testing"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestSyncFillsAggregatedRoleAndSkipsTheRest: a sync writes the matched roles' rules into an
// aggregated role; a role gone or without an aggregationRule is nothing to do.
func TestSyncFillsAggregatedRoleAndSkipsTheRest(t *testing.T) {
	read := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	cs := fake.NewClientset(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{
			ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"to-agg": "true"}}}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader", Labels: map[string]string{"to-agg": "true"}}, Rules: []rbacv1.PolicyRule{read}},
	)
	factory := informers.NewSharedInformerFactory(cs, 0)
	c, err := New(cs, factory.Rbac().V1().ClusterRoles(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := controllertest.StartInformers(t, factory)
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
