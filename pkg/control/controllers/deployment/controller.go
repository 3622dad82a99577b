// Package deployment rolls Deployments out through ReplicaSets, as kube-controller-manager's
// deployment controller does: one ReplicaSet per pod template (named by the template's
// hash), scaled up and down by the RollingUpdate or Recreate strategy, numbered by revision
// so `kubectl rollout history|undo` work, with the status and conditions that
// `kubectl get deploy` and `kubectl rollout status` read.
package deployment

import (
	"context"
	"log/slog"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllerref"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// workers is how many Deployments are synced at once (--concurrent-deployment-syncs).
const workers = 5

var kind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Controller is the deployment controller.
type Controller struct {
	client      kubernetes.Interface
	deployments appslisters.DeploymentLister
	replicaSets appslisters.ReplicaSetLister
	pods        corelisters.PodLister
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	recorder    record.EventRecorder
	clock       clock.Clock
	log         *slog.Logger
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, deployments appsinformers.DeploymentInformer, replicaSets appsinformers.ReplicaSetInformer,
	pods coreinformers.PodInformer, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		client: client, deployments: deployments.Lister(), replicaSets: replicaSets.Lister(), pods: pods.Lister(),
		synced:   []cache.InformerSynced{deployments.Informer().HasSynced, replicaSets.Informer().HasSynced, pods.Informer().HasSynced},
		queue:    workloop.NewQueue[string]("deployment"),
		recorder: recorder, clock: clock.RealClock{}, log: log,
	}
	if _, err := deployments.Informer().AddEventHandler(workloop.OnEvery(workloop.Enqueue(c.queue))); err != nil {
		return nil, err
	}
	onReplicaSet := func(obj any) {
		if rs, ok := workloop.Object[*appsv1.ReplicaSet](obj); ok {
			c.enqueueOwnerOrMatching(rs.Namespace, rs.Labels, metav1.GetControllerOf(rs))
		}
	}
	if _, err := replicaSets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onReplicaSet, DeleteFunc: onReplicaSet,
		UpdateFunc: func(oldObj, newObj any) {
			onReplicaSet(oldObj)
			onReplicaSet(newObj)
		},
	}); err != nil {
		return nil, err
	}
	// Recreate waits for the old pods to be gone: a pod's deletion may be what it waits for.
	_, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		pod, ok := workloop.Object[*corev1.Pod](obj)
		if !ok {
			return
		}
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "ReplicaSet" {
			if rs, err := c.replicaSets.ReplicaSets(pod.Namespace).Get(ref.Name); err == nil {
				c.enqueueOwnerOrMatching(rs.Namespace, nil, metav1.GetControllerOf(rs))
			}
		}
	}})
	return c, err
}

// enqueueOwnerOrMatching queues the Deployment controlling a ReplicaSet, or for an orphan
// every Deployment whose selector matches its labels (it may be adopted).
func (c *Controller) enqueueOwnerOrMatching(ns string, lbls map[string]string, ref *metav1.OwnerReference) {
	if ref != nil {
		if ref.Kind == kind.Kind {
			c.queue.Add(ns + "/" + ref.Name)
		}
		return
	}
	if lbls == nil {
		return
	}
	ds, err := c.deployments.Deployments(ns).List(labels.Everything())
	if err != nil {
		return
	}
	for _, d := range ds {
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(lbls)) {
			c.queue.Add(ns + "/" + d.Name)
		}
	}
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, workers, c.queue, c.log, c.sync, c.synced...)
}

// sync rolls one Deployment a step further and writes its status; it asks for another look
// when a deadline or minReadySeconds will pass without an event to wake it.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	cached, found, err := workloop.Lookup(key, c.deployments.Deployments)
	if !found {
		return 0, err
	}
	d := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || selector.Empty() {
		c.recorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		return 0, nil
	}
	rsList, err := c.claimReplicaSets(ctx, d, selector)
	if err != nil {
		return 0, err
	}
	r := &rollout{c: c, d: d, all: rsList}
	if d.DeletionTimestamp != nil {
		return r.syncStatusOnly(ctx)
	}
	if err := r.checkPausedCondition(ctx); err != nil {
		return 0, err
	}
	if d.Spec.Paused || r.isScalingEvent() {
		return r.scale(ctx)
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return r.recreate(ctx, selector)
	}
	return r.rollingUpdate(ctx)
}

// claimReplicaSets returns the ReplicaSets d controls, adopting and releasing as its
// selector says.
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := c.replicaSets.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return controllerref.Claim(ctx, d, kind, c.client.AppsV1().Deployments(d.Namespace).Get, selector, all, func(ctx context.Context, rs *appsv1.ReplicaSet, patch []byte) error {
		_, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}
