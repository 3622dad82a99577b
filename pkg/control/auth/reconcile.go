package auth

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
)

// ReconcilePolicy makes the bootstrap ClusterRoles and ClusterRoleBindings exist with at
// least their default rules and subjects, as kube-apiserver's rbac/bootstrap-roles hook
// does at every start: missing ones are created, added permissions and subjects are kept,
// objects annotated rbac.authorization.kubernetes.io/autoupdate=false are left alone.
// It retries until ctx ends while the API is not yet answering.
func ReconcilePolicy(ctx context.Context, client kubernetes.Interface, log *slog.Logger) error {
	roles := reconciliation.ClusterRoleModifier{Client: client.RbacV1().ClusterRoles()}
	bindings := reconciliation.ClusterRoleBindingClientAdapter{Client: client.RbacV1().ClusterRoleBindings()}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, r := range BootstrapClusterRoles() {
			res, err := (&reconciliation.ReconcileRoleOptions{Role: reconciliation.ClusterRoleRuleOwner{ClusterRole: &r}, Client: roles, Confirm: true}).Run()
			if err != nil {
				log.Info("reconciling the bootstrap policy", "clusterrole", r.Name, "err", err)
				return false, nil
			}
			if res.Operation != reconciliation.ReconcileNone {
				log.Debug("bootstrap clusterrole reconciled", "name", r.Name, "operation", res.Operation)
			}
		}
		for _, b := range BootstrapClusterRoleBindings() {
			res, err := (&reconciliation.ReconcileRoleBindingOptions{RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: &b}, Client: bindings, Confirm: true}).Run()
			if err != nil {
				log.Info("reconciling the bootstrap policy", "clusterrolebinding", b.Name, "err", err)
				return false, nil
			}
			if res.Operation != reconciliation.ReconcileNone {
				log.Debug("bootstrap clusterrolebinding reconciled", "name", b.Name, "operation", res.Operation)
			}
		}
		return true, nil
	})
}
