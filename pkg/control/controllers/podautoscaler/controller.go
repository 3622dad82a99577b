// Package podautoscaler is the horizontal pod autoscaler controller, as
// kube-controller-manager's: every sync period it reads each HorizontalPodAutoscaler's
// target through the scale subresource, the target's pods' usage from metrics.k8s.io, and
// sets the replicas that bring the usage to the target, within the autoscaler's bounds,
// stabilization window and rate policies. Pods, Object and External metrics need a custom
// metrics API, which minik8s does not serve: such metrics are reported as failing.
package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	autoscalinginformers "k8s.io/client-go/informers/autoscaling/v2"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/internal/controller/workloop"
)

// Name is the controller's name, the source of its Events.
const Name = "horizontal-pod-autoscaler"

// Options are kube-controller-manager's --horizontal-pod-autoscaler-* settings.
type Options struct {
	SyncPeriod              time.Duration // 15s
	Tolerance               float64       // 0.1
	DownscaleStabilization  time.Duration // 5m
	CPUInitializationPeriod time.Duration // 5m
	InitialReadinessDelay   time.Duration // 30s
}

// DefaultOptions are kube-controller-manager's defaults.
func DefaultOptions() Options {
	return Options{SyncPeriod: 15 * time.Second, Tolerance: 0.1, DownscaleStabilization: 5 * time.Minute,
		CPUInitializationPeriod: 5 * time.Minute, InitialReadinessDelay: 30 * time.Second}
}

// Controller scales the autoscalers' targets.
type Controller struct {
	client   kubernetes.Interface
	scales   scale.ScalesGetter
	mapper   meta.RESTMapper
	metrics  MetricsSource
	hpas     autoscalinglisters.HorizontalPodAutoscalerLister
	pods     corelisters.PodLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	clock    clock.Clock
	opts     Options
	calc     calculator
	history  *history
	log      *slog.Logger
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, scales scale.ScalesGetter, mapper meta.RESTMapper, metrics MetricsSource,
	hpas autoscalinginformers.HorizontalPodAutoscalerInformer, pods coreinformers.PodInformer,
	recorder record.EventRecorder, clk clock.Clock, opts Options, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		client: client, scales: scales, mapper: mapper, metrics: metrics,
		hpas: hpas.Lister(), pods: pods.Lister(), synced: []cache.InformerSynced{hpas.Informer().HasSynced, pods.Informer().HasSynced},
		queue:    workloop.NewQueue[string]("horizontalpodautoscaler"),
		recorder: recorder, clock: clk, opts: opts, history: newHistory(), log: log,
		calc: calculator{tolerance: opts.Tolerance, cpuInitializationPeriod: opts.CPUInitializationPeriod,
			initialReadinessDelay: opts.InitialReadinessDelay, now: clk.Now},
	}
	enqueue := workloop.Enqueue(c.queue)
	_, err := hpas.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, cur any) {
			// Status writes (ours) do not call for a sync before the period is up.
			if o, n := old.(*autoscalingv2.HorizontalPodAutoscaler), cur.(*autoscalingv2.HorizontalPodAutoscaler); !reflect.DeepEqual(o.Spec, n.Spec) {
				enqueue(cur)
			}
		},
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.history.forget(key)
			}
		},
	})
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
}

// sync reconciles one autoscaler and asks to be back after the sync period.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	cached, found, err := workloop.Lookup(key, c.hpas.HorizontalPodAutoscalers)
	if err != nil {
		return 0, err
	}
	if !found {
		c.history.forget(key)
		return 0, nil
	}
	hpa := cached.DeepCopy()
	if err := c.reconcile(ctx, key, hpa); err != nil {
		c.log.Info("autoscaler did not reconcile", "hpa", key, "err", err)
	}
	if !reflect.DeepEqual(hpa.Status, cached.Status) {
		if _, err := c.client.AutoscalingV2().HorizontalPodAutoscalers(cached.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			c.recorder.Event(hpa, corev1.EventTypeWarning, "FailedUpdateStatus", err.Error())
			return 0, fmt.Errorf("failed to update status for %s: %w", cached.Name, err)
		}
	}
	return c.opts.SyncPeriod, nil
}

// reconcile works out and sets the target's replicas, writing the outcome into hpa.Status.
func (c *Controller) reconcile(ctx context.Context, key string, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	ref := hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		c.failed(hpa, autoscalingv2.AbleToScale, "FailedGetScale", "the HPA controller was unable to get the target's current scale: %v", err)
		return err
	}
	sc, gr, err := c.getScale(ctx, hpa.Namespace, gv.WithKind(ref.Kind).GroupKind(), ref.Name)
	if err != nil {
		c.failed(hpa, autoscalingv2.AbleToScale, "FailedGetScale", "the HPA controller was unable to get the target's current scale: %v", err)
		return err
	}
	setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale", c.clock.Now())
	current := sc.Spec.Replicas
	c.history.recordInitial(key, current, c.clock.Now())
	minReplicas := ptr.Deref(hpa.Spec.MinReplicas, 1)
	var desired int32
	var reason string
	var statuses []autoscalingv2.MetricStatus
	rescale := true
	switch {
	case current == 0 && minReplicas != 0:
		rescale = false
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero", c.clock.Now())
	case current > hpa.Spec.MaxReplicas:
		desired, reason = hpa.Spec.MaxReplicas, "Current number of replicas above Spec.MaxReplicas"
	case current < minReplicas:
		desired, reason = minReplicas, "Current number of replicas below Spec.MinReplicas"
	default:
		var metricName string
		var proposal int32
		proposal, metricName, statuses, err = c.replicasForMetrics(ctx, hpa, sc, current)
		if proposal < 0 {
			hpa.Status.CurrentReplicas, hpa.Status.CurrentMetrics = current, statuses
			c.recorder.Event(hpa, corev1.EventTypeWarning, "FailedComputeMetricsReplicas", err.Error())
			return fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", targetName(ref), err)
		}
		desired = proposal
		if desired > current {
			reason = metricName + " above target"
		} else if desired < current {
			reason = "All metrics below target"
		}
		l := c.history.normalize(key, hpa, current, desired, minReplicas, c.clock.Now(), c.opts.DownscaleStabilization)
		now := c.clock.Now()
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, l.ableReason, l.ableMessage, now)
		limited := corev1.ConditionFalse
		if l.limited {
			limited = corev1.ConditionTrue
		}
		setCondition(hpa, autoscalingv2.ScalingLimited, limited, l.limitReason, l.limitMessage, now)
		desired = l.replicas
		rescale = desired != current
	}
	if rescale {
		sc.Spec.Replicas = desired
		if _, err := c.scales.Scales(hpa.Namespace).Update(ctx, gr, sc, metav1.UpdateOptions{}); err != nil {
			c.recorder.Eventf(hpa, corev1.EventTypeWarning, "FailedRescale", "New size: %d; reason: %s; error: %v", desired, reason, err)
			setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", "the HPA controller was unable to update the target scale: "+err.Error(), c.clock.Now())
			c.setStatus(hpa, current, hpa.Status.DesiredReplicas, statuses, false)
			return err
		}
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", fmt.Sprintf("the HPA controller was able to update the target scale to %d", desired), c.clock.Now())
		c.recorder.Eventf(hpa, corev1.EventTypeNormal, "SuccessfulRescale", "New size: %d; reason: %s", desired, reason)
		c.history.recordScale(key, hpa.Spec.Behavior, current, desired, c.clock.Now())
		c.log.Info("rescaled", "hpa", key, "from", current, "to", desired, "reason", reason)
	} else {
		desired = current
	}
	c.setStatus(hpa, current, desired, statuses, rescale)
	return nil
}

func (c *Controller) setStatus(hpa *autoscalingv2.HorizontalPodAutoscaler, current, desired int32, statuses []autoscalingv2.MetricStatus, rescaled bool) {
	hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas, hpa.Status.CurrentMetrics = current, desired, statuses
	hpa.Status.ObservedGeneration = &hpa.Generation
	if rescaled {
		now := metav1.NewTime(c.clock.Now())
		hpa.Status.LastScaleTime = &now
	}
}

// failed records a failure as a Warning Event and a False condition.
func (c *Controller) failed(hpa *autoscalingv2.HorizontalPodAutoscaler, cond autoscalingv2.HorizontalPodAutoscalerConditionType, reason, format string, err error) {
	c.recorder.Event(hpa, corev1.EventTypeWarning, reason, err.Error())
	setCondition(hpa, cond, corev1.ConditionFalse, reason, fmt.Sprintf(format, err), c.clock.Now())
}

// getScale reads the target's scale subresource, trying each resource its kind maps to.
func (c *Controller) getScale(ctx context.Context, ns string, gk schema.GroupKind, name string) (*autoscalingv1.Scale, schema.GroupResource, error) {
	mappings, err := c.mapper.RESTMappings(gk)
	if err != nil {
		return nil, schema.GroupResource{}, err
	}
	var firstErr error
	for _, m := range mappings {
		gr := m.Resource.GroupResource()
		sc, err := c.scales.Scales(ns).Get(ctx, gr, name, metav1.GetOptions{})
		if err == nil {
			return sc, gr, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("unrecognized resource")
	}
	return nil, schema.GroupResource{}, firstErr
}

// replicasForMetrics is the largest replica count any metric asks for, the name of that
// metric and every metric's status. It is -1 when too many metrics failed to decide
// (all of them, or some while the valid ones ask to scale down).
func (c *Controller) replicasForMetrics(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, sc *autoscalingv1.Scale, current int32) (int32, string, []autoscalingv2.MetricStatus, error) {
	selector, err := c.selector(hpa, sc)
	if err != nil {
		return -1, "", nil, err
	}
	statuses := make([]autoscalingv2.MetricStatus, len(hpa.Spec.Metrics))
	replicas, name := int32(0), ""
	invalid := 0
	var firstErr error
	var firstCond autoscalingv2.HorizontalPodAutoscalerCondition
	for i, spec := range hpa.Spec.Metrics {
		proposal, metricName, status, cond, err := c.replicasForMetric(ctx, hpa, spec, selector, current)
		if err != nil {
			invalid++
			if firstErr == nil {
				firstErr, firstCond = err, cond
			}
			continue
		}
		statuses[i] = status
		// The first valid metric names the proposal even when it asks for none.
		if name == "" || proposal > replicas {
			replicas, name = proposal, metricName
		}
	}
	if invalid >= len(hpa.Spec.Metrics) || (invalid > 0 && replicas < current) {
		// The first failing metric tells why in ScalingActive.
		setCondition(hpa, firstCond.Type, firstCond.Status, firstCond.Reason, firstCond.Message, c.clock.Now())
		return -1, "", statuses, fmt.Errorf("invalid metrics (%d invalid out of %d), first error is: %v", invalid, len(hpa.Spec.Metrics), firstErr)
	}
	setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from "+name, c.clock.Now())
	return replicas, name, statuses, nil
}

// selector is the label selector of the target's pods, from its scale subresource.
func (c *Controller) selector(hpa *autoscalingv2.HorizontalPodAutoscaler, sc *autoscalingv1.Scale) (labels.Selector, error) {
	if sc.Status.Selector == "" {
		err := errors.New("selector is required")
		c.recorder.Event(hpa, corev1.EventTypeWarning, "SelectorRequired", err.Error())
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector", c.clock.Now())
		return nil, err
	}
	sel, err := labels.Parse(sc.Status.Selector)
	if err != nil {
		err = fmt.Errorf("couldn't convert selector into a corresponding internal selector object: %v", err)
		c.recorder.Event(hpa, corev1.EventTypeWarning, "InvalidSelector", err.Error())
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", err.Error(), c.clock.Now())
		return nil, err
	}
	return sel, nil
}

// replicasForMetric is what one metric asks for, with its name as Events word it and its
// status; a failure is an Event and the False ScalingActive condition that would tell it.
func (c *Controller) replicasForMetric(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, spec autoscalingv2.MetricSpec, sel labels.Selector, current int32) (int32, string, autoscalingv2.MetricStatus, autoscalingv2.HorizontalPodAutoscalerCondition, error) {
	var none autoscalingv2.MetricStatus
	var res corev1.ResourceName
	var target autoscalingv2.MetricTarget
	var container string
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		res, target = spec.Resource.Name, spec.Resource.Target
	case autoscalingv2.ContainerResourceMetricSourceType:
		res, target, container = spec.ContainerResource.Name, spec.ContainerResource.Target, spec.ContainerResource.Container
	default:
		err := fmt.Errorf("unable to get %s metric: minik8s serves no custom or external metrics API (custom.metrics.k8s.io, external.metrics.k8s.io)", spec.Type)
		return 0, "", none, c.unableToCompute(hpa, "FailedGet"+string(spec.Type)+"Metric", err), err
	}
	reason := "FailedGetResourceMetric"
	if container != "" {
		reason = "FailedGetContainerResourceMetric"
	}
	metrics, err := c.metrics.PodMetrics(ctx, hpa.Namespace, sel, res, container)
	var replicas int32
	var value autoscalingv2.MetricValueStatus
	var name string
	if err == nil {
		pods, lerr := c.pods.Pods(hpa.Namespace).List(sel)
		if lerr != nil {
			err = lerr
		} else if target.AverageUtilization != nil {
			name = fmt.Sprintf("%s resource utilization (percentage of request)", res)
			if container != "" {
				name = fmt.Sprintf("%s container resource utilization (percentage of request)", res)
			}
			var util int32
			var raw int64
			replicas, util, raw, err = c.calc.utilizationReplicas(current, *target.AverageUtilization, metrics, pods, res, container)
			value = autoscalingv2.MetricValueStatus{AverageUtilization: &util, AverageValue: quantity(res, raw)}
		} else if target.AverageValue != nil {
			name = fmt.Sprintf("%s resource", res)
			if container != "" {
				name = fmt.Sprintf("%s container resource", res)
			}
			var avg int64
			replicas, avg, err = c.calc.averageValueReplicas(current, target.AverageValue.MilliValue(), metrics, pods, res)
			value = autoscalingv2.MetricValueStatus{AverageValue: quantity(res, avg)}
		} else {
			err = errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
		}
	}
	if err != nil {
		if target.AverageUtilization != nil {
			err = fmt.Errorf("failed to get %s utilization: %w", res, err)
		} else {
			err = fmt.Errorf("failed to get %s usage: %w", res, err)
		}
		cond := c.unableToCompute(hpa, reason, err)
		if container != "" {
			return 0, "", none, cond, fmt.Errorf("failed to get %s container metric value: %w", res, err)
		}
		return 0, "", none, cond, fmt.Errorf("failed to get %s resource metric value: %w", res, err)
	}
	status := autoscalingv2.MetricStatus{Type: spec.Type}
	if container != "" {
		status.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: res, Container: container, Current: value}
	} else {
		status.Resource = &autoscalingv2.ResourceMetricStatus{Name: res, Current: value}
	}
	return replicas, name, status, autoscalingv2.HorizontalPodAutoscalerCondition{}, nil
}

// unableToCompute records a metric's failure as a Warning Event and is the condition
// that tells it.
func (c *Controller) unableToCompute(hpa *autoscalingv2.HorizontalPodAutoscaler, reason string, err error) autoscalingv2.HorizontalPodAutoscalerCondition {
	c.recorder.Event(hpa, corev1.EventTypeWarning, reason, err.Error())
	return autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse,
		Reason: reason, Message: "the HPA was unable to compute the replica count: " + err.Error()}
}

// quantity is a usage in milli-units as metrics-server shows it: memory in binary units.
func quantity(res corev1.ResourceName, milli int64) *resource.Quantity {
	if res == corev1.ResourceMemory {
		return resource.NewMilliQuantity(milli, resource.BinarySI)
	}
	return resource.NewMilliQuantity(milli, resource.DecimalSI)
}

func targetName(ref autoscalingv2.CrossVersionObjectReference) string {
	return strings.ToLower(ref.Kind) + "/" + ref.Name
}

// setCondition sets a condition, moving its transition time only when its status changes.
func setCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) {
	for i := range hpa.Status.Conditions {
		c := &hpa.Status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message = status, reason, message
		return
	}
	hpa.Status.Conditions = append(hpa.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
		Type: t, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now)})
}
