// Package clusterroleaggregation fills the rules of every ClusterRole that has an
// aggregationRule with the rules of the ClusterRoles its selectors match, as
// kube-controller-manager's clusterrole-aggregation controller does (admin, edit and view
// are built that way, and users extend them by labelling their own roles).
package clusterroleaggregation

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Controller is the clusterrole-aggregation controller.
type Controller struct {
	client kubernetes.Interface
	roles  rbaclisters.ClusterRoleLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	log    *slog.Logger
}

// New wires the controller to the ClusterRole informer.
func New(client kubernetes.Interface, roles rbacinformers.ClusterRoleInformer, log *slog.Logger) (*Controller, error) {
	c := &Controller{client: client, roles: roles.Lister(), synced: roles.Informer().HasSynced, log: log,
		queue: workloop.NewQueue[string]("clusterrole-aggregation")}
	// Any change may feed any aggregated role: look at all of them.
	enqueueAll := func(any) {
		all, _ := c.roles.List(labels.Everything())
		for _, r := range all {
			if r.AggregationRule != nil {
				c.queue.Add(r.Name)
			}
		}
	}
	_, err := roles.Informer().AddEventHandler(workloop.OnEvery(enqueueAll))
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced)
}

func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	role, found, err := workloop.Found(c.roles.Get(name))
	if !found {
		return 0, err
	}
	if role.AggregationRule == nil {
		return 0, nil
	}
	all, err := c.roles.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	rules := Aggregate(role, all)
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return 0, nil
	}
	return 0, c.apply(ctx, role.Name, rules)
}

// FieldManager is the manager of the aggregated rules, kube's.
const FieldManager = "clusterrole-aggregation-controller"

// apply writes the rules by a forced server-side apply, as kube's applyClusterRoles: the
// role's managedFields then show this controller as the rules' owner.
func (c *Controller) apply(ctx context.Context, name string, rules []rbacv1.PolicyRule) error {
	config := rbacv1ac.ClusterRole(name)
	for _, r := range rules {
		rule := rbacv1ac.PolicyRule()
		rule.Verbs, rule.APIGroups, rule.Resources, rule.ResourceNames, rule.NonResourceURLs = r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs
		config.WithRules(rule)
	}
	_, err := c.client.RbacV1().ClusterRoles().Apply(ctx, config, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// Aggregate is the rules role gets, as kube's syncClusterRole orders them: selector by
// selector, the rules of every other ClusterRole the selector matches in name order, each
// rule once (so `kubectl get clusterrole -o yaml` lists them as Kubernetes does).
func Aggregate(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) []rbacv1.PolicyRule {
	sorted := append([]*rbacv1.ClusterRole(nil), all...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var rules []rbacv1.PolicyRule
	for _, s := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&s)
		if err != nil {
			continue // validation refuses such selectors; an old one selects nothing
		}
		for _, other := range sorted {
			if other.Name == role.Name || !sel.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, r := range other.Rules {
				if !hasRule(rules, r) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules
}

func hasRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for _, x := range rules {
		if equality.Semantic.DeepEqual(x, r) {
			return true
		}
	}
	return false
}
