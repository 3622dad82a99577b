// Package flowschemastatus writes the Dangling condition of every FlowSchema, as
// kube-apiserver's API Priority and Fairness config consumer does
// (k8s.io/apiserver/pkg/util/flowcontrol/apf_controller.go): False (reason Found) when
// the PriorityLevelConfiguration the schema names exists, True (reason NotFound) when it
// does not, applied to the status by server-side apply as that controller's field manager.
// `kubectl get flowschemas` shows it as the MISSINGPL column.
package flowschemastatus

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	applyv1 "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
	informersv1 "k8s.io/client-go/informers/flowcontrol/v1"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/flowcontrol/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// FieldManager is upstream's (k8s.io/apiserver/pkg/util/flowcontrol.ConfigConsumerAsFieldManager).
const FieldManager = "api-priority-and-fairness-config-consumer-v1"

// Controller keeps the FlowSchemas' Dangling condition.
type Controller struct {
	client  kubernetes.Interface
	schemas listersv1.FlowSchemaLister
	levels  listersv1.PriorityLevelConfigurationLister
	synced  []cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
	log     *slog.Logger
}

// New wires the controller to the FlowSchema and PriorityLevelConfiguration informers.
func New(client kubernetes.Interface, schemas informersv1.FlowSchemaInformer, levels informersv1.PriorityLevelConfigurationInformer, log *slog.Logger) (*Controller, error) {
	c := &Controller{client: client, schemas: schemas.Lister(), levels: levels.Lister(), log: log,
		synced: []cache.InformerSynced{schemas.Informer().HasSynced, levels.Informer().HasSynced},
		queue:  workloop.NewQueue[string]("flowschema-status")}
	if _, err := schemas.Informer().AddEventHandler(workloop.OnAddOrUpdate(workloop.Enqueue(c.queue))); err != nil {
		return nil, err
	}
	// A level made or removed changes whether the schemas naming it dangle.
	enqueueAll := func(any) {
		all, _ := c.schemas.List(labels.Everything())
		for _, fs := range all {
			c.queue.Add(fs.Name)
		}
	}
	_, err := levels.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueAll, DeleteFunc: enqueueAll,
	})
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
}

func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	fs, found, err := workloop.Found(c.schemas.Get(name))
	if !found {
		return 0, err
	}
	level := fs.Spec.PriorityLevelConfiguration.Name
	_, err = c.levels.Get(level)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	want := Dangling(level, apierrors.IsNotFound(err))
	for _, cond := range fs.Status.Conditions {
		if cond.Type == want.Type && cond.Status == want.Status && cond.Reason == want.Reason && cond.Message == want.Message {
			return 0, nil
		}
	}
	status := applyv1.FlowSchema(fs.Name).WithStatus(applyv1.FlowSchemaStatus().WithConditions(
		applyv1.FlowSchemaCondition().WithType(want.Type).WithStatus(want.Status).WithReason(want.Reason).
			WithLastTransitionTime(metav1.Now()).WithMessage(want.Message)))
	_, err = c.client.FlowcontrolV1().FlowSchemas().ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	return 0, err
}

// Dangling is the condition of a FlowSchema naming the priority level level, in upstream's words.
func Dangling(level string, missing bool) flowcontrolv1.FlowSchemaCondition {
	if missing {
		return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue, Reason: "NotFound",
			Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", level)}
	}
	return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse, Reason: "Found",
		Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", level)}
}
