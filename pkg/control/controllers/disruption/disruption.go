// Package disruption keeps PodDisruptionBudgets' status, as kube-controller-manager's
// disruption controller does: how many pods are expected (from their controllers' scale),
// healthy and needed, and so how many disruptions the eviction subresource may allow.
package disruption

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	endpointsliceutil "k8s.io/endpointslice/util"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

const (
	// Name is the controller's name in logs.
	Name = "disruption-controller"
	// EventSource is the source of its Events, as kube-controller-manager's disruption
	// controller (which names no controller of its own there).
	EventSource = "controllermanager"
)

// deletionTimeout is how long a pod the eviction subresource recorded as disrupted counts
// as gone before the controller stops waiting for its deletion to show.
const deletionTimeout = 2 * time.Minute

// Controller computes PodDisruptionBudget status.
type Controller struct {
	client      kubernetes.Interface
	pdbs        policylisters.PodDisruptionBudgetLister
	pods        corelisters.PodLister
	rss         appslisters.ReplicaSetLister
	deployments appslisters.DeploymentLister
	sets        appslisters.StatefulSetLister
	rcs         corelisters.ReplicationControllerLister
	// mapper, scales and discovery find the scale of a controller of another kind.
	mapper    apimeta.RESTMapper
	scales    scale.ScalesGetter
	discovery discovery.DiscoveryInterface
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	clock     clock.Clock
	log       *slog.Logger
}

// New wires the controller to the shared informers: budgets, pods, and the controllers
// whose scale says how many pods a budget expects (other kinds' through scales).
func New(client kubernetes.Interface, f informers.SharedInformerFactory, mapper apimeta.RESTMapper, scales scale.ScalesGetter, recorder record.EventRecorder, clk clock.Clock, log *slog.Logger) (*Controller, error) {
	pdbs, pods := f.Policy().V1().PodDisruptionBudgets(), f.Core().V1().Pods()
	rss, deps, sets, rcs := f.Apps().V1().ReplicaSets(), f.Apps().V1().Deployments(), f.Apps().V1().StatefulSets(), f.Core().V1().ReplicationControllers()
	c := &Controller{
		client: client, pdbs: pdbs.Lister(), pods: pods.Lister(),
		rss: rss.Lister(), deployments: deps.Lister(), sets: sets.Lister(), rcs: rcs.Lister(),
		mapper: mapper, scales: scales, discovery: client.Discovery(),
		synced: []cache.InformerSynced{pdbs.Informer().HasSynced, pods.Informer().HasSynced, rss.Informer().HasSynced,
			deps.Informer().HasSynced, sets.Informer().HasSynced, rcs.Informer().HasSynced},
		queue:    workloop.NewQueue[string]("disruption"),
		recorder: recorder, clock: clk, log: log,
	}
	if _, err := pdbs.Informer().AddEventHandler(workloop.OnAddOrUpdate(c.enqueue)); err != nil {
		return nil, err
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podChanged,
		UpdateFunc: func(old, obj any) { c.podChanged(old); c.podChanged(obj) },
		DeleteFunc: c.podChanged,
	}); err != nil {
		return nil, err
	}
	// A scale change moves expectedPods: look again at the budgets that select the
	// controller's pods. Other changes (status, templates) reach them through the pods, so a
	// budget is not synced, and a budget without pods does not say NoPods, at every write
	// of a workload beside it (Kubernetes watches only pods and budgets).
	for _, inf := range []cache.SharedIndexInformer{rss.Informer(), deps.Informer(), sets.Informer(), rcs.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: c.scaleChanged,
			UpdateFunc: func(old, obj any) {
				if r, pod := scaleOf(old); r != nil && pod != nil {
					if r2, _ := scaleOf(obj); r2 == nil || *r2 != *r {
						c.podChanged(pod)
					}
				}
			},
			DeleteFunc: c.scaleChanged,
		}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// scaleOf is a workload's replicas and a pod of it (its namespace and labels).
func scaleOf(obj any) (*int32, *corev1.Pod) {
	replicas, l := replicasAndLabels(obj)
	if l == nil {
		return replicas, nil
	}
	return replicas, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: obj.(metav1.Object).GetNamespace(), Labels: l}}
}

func replicasAndLabels(obj any) (*int32, map[string]string) {
	switch w := obj.(type) {
	case *appsv1.ReplicaSet:
		return w.Spec.Replicas, w.Spec.Template.Labels
	case *appsv1.Deployment:
		return w.Spec.Replicas, w.Spec.Template.Labels
	case *appsv1.StatefulSet:
		return w.Spec.Replicas, w.Spec.Template.Labels
	case *corev1.ReplicationController:
		if w.Spec.Template == nil {
			return w.Spec.Replicas, w.Spec.Selector
		}
		return w.Spec.Replicas, w.Spec.Template.Labels
	}
	return nil, nil
}

// scaleChanged wakes the budgets of a workload added or deleted.
func (c *Controller) scaleChanged(obj any) {
	if w, ok := workloop.Object[any](obj); ok {
		if _, pod := scaleOf(w); pod != nil {
			c.podChanged(pod)
		}
	}
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
}

func (c *Controller) enqueue(obj any) { workloop.Enqueue(c.queue)(obj) }

// podChanged wakes the budgets whose selector matches the pod.
func (c *Controller) podChanged(obj any) {
	pod, ok := workloop.Object[metav1.Object](obj)
	if !ok {
		return
	}
	pdbs, _ := c.pdbs.PodDisruptionBudgets(pod.GetNamespace()).List(labels.Everything())
	var matched []*policyv1.PodDisruptionBudget
	for _, pdb := range pdbs {
		if sel, err := selector(pdb); err == nil && sel.Matches(labels.Set(pod.GetLabels())) {
			c.enqueue(pdb)
			matched = append(matched, pdb)
		}
	}
	// Kubernetes warns on a real pod that more than one budget covers (the eviction
	// subresource refuses such a pod).
	if p, ok := pod.(*corev1.Pod); ok && len(matched) > 1 && p.UID != "" {
		c.recorder.Eventf(p, corev1.EventTypeWarning, "MultiplePodDisruptionBudgets",
			"Pod %q/%q matches multiple PodDisruptionBudgets.  Chose %q arbitrarily.", p.Namespace, p.Name, matched[0].Name)
	}
}

// selector is the budget's pod selector; a budget without one selects nothing.
func selector(pdb *policyv1.PodDisruptionBudget) (labels.Selector, error) {
	if pdb.Spec.Selector == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	shared, found, err := workloop.Lookup(key, c.pdbs.PodDisruptionBudgets)
	if !found {
		return 0, err
	}
	again, err := c.trySync(ctx, shared)
	// As kube's sync: a conflict is only retried; any other failure allows no disruption
	// until a sync succeeds.
	if err != nil && !apierrors.IsConflict(err) {
		return 0, c.failSafe(ctx, shared, err)
	}
	return again, err
}

// trySync computes the budget's status from its pods and writes it.
func (c *Controller) trySync(ctx context.Context, shared *policyv1.PodDisruptionBudget) (time.Duration, error) {
	pdb := shared.DeepCopy()
	pods, err := c.matchingPods(pdb)
	if err != nil {
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, "NoPods", "Failed to get pods: %v", err)
		return 0, err
	}
	if len(pods) == 0 {
		c.recorder.Event(pdb, corev1.EventTypeNormal, "NoPods", "No matching pods found")
	}
	expected, desired, unmanaged, err := c.expectations(ctx, pdb, pods)
	if err != nil {
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", err)
		return 0, err
	}
	if unmanaged {
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, "UnmanagedPods", "Pods selected by this PodDisruptionBudget (selector: %v) were found "+
			"to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. "+
			"To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.", pdb.Spec.Selector)
	}
	again := c.pruneDisrupted(pdb, pods)
	healthy := int32(0)
	for _, p := range pods {
		if _, disrupted := pdb.Status.DisruptedPods[p.Name]; p.DeletionTimestamp == nil && !disrupted && endpointsliceutil.IsPodReady(p) {
			healthy++
		}
	}
	allowed := healthy - desired
	if expected <= 0 || allowed < 0 {
		allowed = 0
	}
	st := &pdb.Status
	st.ExpectedPods, st.DesiredHealthy, st.CurrentHealthy, st.DisruptionsAllowed = expected, desired, healthy, allowed
	st.ObservedGeneration = pdb.Generation
	cond := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, Reason: policyv1.SufficientPodsReason, ObservedGeneration: pdb.Generation}
	if allowed == 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
	}
	apimeta.SetStatusCondition(&st.Conditions, cond)
	return again, c.writeStatus(ctx, shared, pdb)
}

// failSafe allows no disruption after a failed sync, saying why, and keeps the rest of the
// stored status, its observedGeneration too, as Kubernetes' failSafe: the status was not
// computed for the current spec.
func (c *Controller) failSafe(ctx context.Context, shared *policyv1.PodDisruptionBudget, err error) error {
	pdb := shared.DeepCopy()
	pdb.Status.DisruptionsAllowed = 0
	apimeta.SetStatusCondition(&pdb.Status.Conditions, metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
		Reason: policyv1.SyncFailedReason, Message: err.Error(), ObservedGeneration: pdb.Status.ObservedGeneration})
	return c.writeStatus(ctx, shared, pdb)
}

func (c *Controller) writeStatus(ctx context.Context, shared, pdb *policyv1.PodDisruptionBudget) error {
	if apiequality.Semantic.DeepEqual(shared.Status, pdb.Status) {
		return nil
	}
	_, err := c.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
	return err // as it is: failSafe's condition says it, as kube's
}

// matchingPods are the pods the budget selects. As kube's getPodsForPdb, a selector that
// does not convert (stored before validation refused it) is an error: the sync fails safe
// rather than counting no pods.
func (c *Controller) matchingPods(pdb *policyv1.PodDisruptionBudget) ([]*corev1.Pod, error) {
	sel, err := selector(pdb)
	if err != nil {
		return nil, err
	}
	return c.pods.Pods(pdb.Namespace).List(sel)
}

// pruneDisrupted forgets the pods the eviction subresource recorded once their deletion
// shows, or once they were not deleted in time; it returns when to look at the next one.
func (c *Controller) pruneDisrupted(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) time.Duration {
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	now := c.clock.Now()
	var next time.Duration
	for name, at := range pdb.Status.DisruptedPods {
		p, ok := byName[name]
		left := at.Add(deletionTimeout).Sub(now)
		if !ok || p.DeletionTimestamp != nil || left <= 0 {
			delete(pdb.Status.DisruptedPods, name)
			continue
		}
		if next == 0 || left < next {
			next = left
		}
	}
	if len(pdb.Status.DisruptedPods) == 0 {
		pdb.Status.DisruptedPods = nil
	}
	return next
}

// expectations are how many pods the budget expects and how many must stay healthy, and
// whether some pods have no controller to count them by. A minAvailable number counts the
// matching pods; maxUnavailable and percentages scale with the replicas of the pods'
// controllers.
func (c *Controller) expectations(ctx context.Context, pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (expected, desired int32, unmanaged bool, err error) {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		if expected, unmanaged, err = c.scaleOf(ctx, pods); err != nil {
			return 0, 0, false, err
		}
		unavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, false, err
		}
		return expected, max(expected-int32(unavailable), 0), unmanaged, nil
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		return int32(len(pods)), pdb.Spec.MinAvailable.IntVal, false, nil
	case pdb.Spec.MinAvailable != nil:
		if expected, unmanaged, err = c.scaleOf(ctx, pods); err != nil {
			return 0, 0, false, err
		}
		available, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		return expected, int32(available), unmanaged, err
	}
	return 0, 0, false, nil
}

// scaleOf sums the replicas of the pods' controllers, each counted once; a ReplicaSet of a
// Deployment counts as the Deployment. Pods without a controller are left out, and said.
func (c *Controller) scaleOf(ctx context.Context, pods []*corev1.Pod) (total int32, unmanaged bool, err error) {
	seen := map[types.UID]bool{}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			unmanaged = true
			continue
		}
		uid, replicas, found, err := c.controllerScale(ctx, p.Namespace, ref)
		if err != nil {
			return 0, false, err
		}
		if !found {
			return 0, false, fmt.Errorf("found no controllers for pod %q", p.Name)
		}
		if !seen[uid] {
			seen[uid] = true
			total += replicas
		}
	}
	return total, unmanaged, nil
}

// controllerScale is the UID and replicas of the controller ref names, found as kube's
// finders find it: the workloads from the informers, then any kind through its scale
// subresource (a custom resource's controller); found is false when none matches the ref's
// UID. err stops the lookup: a kind not served, a resource without a scale subresource.
func (c *Controller) controllerScale(ctx context.Context, ns string, ref *metav1.OwnerReference) (uid types.UID, replicas int32, found bool, err error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", 0, false, err
	}
	workload := func(kind string, groups ...string) bool { return ref.Kind == kind && slices.Contains(groups, gv.Group) }
	orOne := func(r *int32) int32 { return ptr.Deref(r, 1) }
	switch {
	case workload("ReplicaSet", "apps", "extensions"):
		rs, err := c.rss.ReplicaSets(ns).Get(ref.Name)
		if err != nil || rs.UID != ref.UID {
			return "", 0, false, nil
		}
		if owner := metav1.GetControllerOf(rs); owner != nil && owner.Kind == "Deployment" {
			if uid, replicas, found, err := c.controllerScale(ctx, ns, owner); found || err != nil {
				return uid, replicas, found, err
			}
		}
		return rs.UID, orOne(rs.Spec.Replicas), true, nil
	case workload("Deployment", "apps", "extensions"):
		d, err := c.deployments.Deployments(ns).Get(ref.Name)
		if err != nil || d.UID != ref.UID {
			return "", 0, false, nil
		}
		return d.UID, orOne(d.Spec.Replicas), true, nil
	case workload("StatefulSet", "apps"):
		s, err := c.sets.StatefulSets(ns).Get(ref.Name)
		if err != nil || s.UID != ref.UID {
			return "", 0, false, nil
		}
		return s.UID, orOne(s.Spec.Replicas), true, nil
	case workload("ReplicationController", ""):
		rc, err := c.rcs.ReplicationControllers(ns).Get(ref.Name)
		if err != nil || rc.UID != ref.UID {
			return "", 0, false, nil
		}
		return rc.UID, orOne(rc.Spec.Replicas), true, nil
	}
	mapping, err := c.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		return "", 0, false, err
	}
	gr := mapping.Resource.GroupResource()
	sc, err := c.scales.Scales(ns).Get(ctx, gr, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Either the object is gone or its kind has no scale subresource: discovery tells.
		if has, err := c.hasScale(mapping.Resource); err != nil || !has {
			return "", 0, false, cmp.Or(err, fmt.Errorf("%s does not implement the scale subresource", gr))
		}
		return "", 0, false, nil
	case err != nil:
		return "", 0, false, err
	case sc.UID != ref.UID:
		return "", 0, false, nil
	}
	return sc.UID, sc.Spec.Replicas, true, nil
}

// hasScale says whether discovery lists a scale subresource of gvr.
func (c *Controller) hasScale(gvr schema.GroupVersionResource) (bool, error) {
	list, err := c.discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource+"/scale" }), nil
}
