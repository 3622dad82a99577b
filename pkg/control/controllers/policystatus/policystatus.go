// Package policystatus writes the status of every ValidatingAdmissionPolicy, as
// kube-controller-manager's validatingadmissionpolicy-status controller does: once per
// generation, the policy's CEL expressions are type-checked against the schemas of the
// kinds it matches (and of its paramKind) by k8s.io/apiserver's own TypeChecker, and what
// it finds is applied to status.typeChecking.expressionWarnings, with
// status.observedGeneration, by server-side apply as the controller's field manager.
// A policy whose expression names a field its kinds lack is admitted (the plugin sees
// unstructured objects); the warning is how kube tells its author.
package policystatus

import (
	"context"
	"log/slog"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	applyv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	informersv1 "k8s.io/client-go/informers/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// FieldManager is upstream's controller name, the manager of the status it applies.
const FieldManager = "validatingadmissionpolicy-status"

// Controller is the validatingadmissionpolicy-status controller.
type Controller struct {
	client   kubernetes.Interface
	policies listersv1.ValidatingAdmissionPolicyLister
	synced   cache.InformerSynced
	checker  *validating.TypeChecker
	queue    workqueue.TypedRateLimitingInterface[string]
	log      *slog.Logger
}

// New wires the controller to the ValidatingAdmissionPolicy informer; checker is
// upstream's type checker with the schemas and REST mapper of the served kinds.
func New(client kubernetes.Interface, policies informersv1.ValidatingAdmissionPolicyInformer, checker *validating.TypeChecker, log *slog.Logger) (*Controller, error) {
	c := &Controller{client: client, policies: policies.Lister(), synced: policies.Informer().HasSynced, checker: checker, log: log,
		queue: workloop.NewQueue[string](FieldManager)}
	_, err := policies.Informer().AddEventHandler(workloop.OnAddOrUpdate(workloop.Enqueue(c.queue)))
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced)
}

func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	policy, found, err := workloop.Found(c.policies.Get(name))
	if !found {
		return 0, err
	}
	if policy.Generation <= policy.Status.ObservedGeneration {
		return 0, nil
	}
	warnings := c.checker.Check(policy)
	applied := make([]*applyv1.ExpressionWarningApplyConfiguration, 0, len(warnings))
	for _, w := range warnings {
		applied = append(applied, applyv1.ExpressionWarning().WithFieldRef(w.FieldRef).WithWarning(w.Warning))
	}
	status := applyv1.ValidatingAdmissionPolicy(policy.Name).WithStatus(applyv1.ValidatingAdmissionPolicyStatus().
		WithObservedGeneration(policy.Generation).
		WithTypeChecking(applyv1.TypeChecking().WithExpressionWarnings(applied...)))
	_, err = c.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	return 0, err
}
