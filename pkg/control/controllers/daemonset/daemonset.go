// Package daemonset runs one pod of each DaemonSet on every node that should have one, as
// kube-controller-manager's daemonset controller does: eligibility by nodeSelector, required
// node affinity and taints (with the tolerations DaemonSet pods get automatically; a pod
// stays on a node whose NoExecute taints it tolerates, an unreachable one too), pods
// pinned to their node by node affinity for the scheduler to bind, RollingUpdate within
// maxUnavailable or maxSurge or OnDelete, a replacement only once the pod it replaces is
// gone (unless surging), ControllerRevisions for `kubectl rollout history`, and the
// status `kubectl rollout status ds` reads.
package daemonset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllerref"
	"github.com/minik8s/minik8s/internal/controller/history"
	"github.com/minik8s/minik8s/internal/controller/podready"
	"github.com/minik8s/minik8s/internal/controller/templatepod"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

var kind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Controller is the daemonset controller.
type Controller struct {
	client    kubernetes.Interface
	sets      appslisters.DaemonSetLister
	pods      corelisters.PodLister
	nodes     corelisters.NodeLister
	revisions appslisters.ControllerRevisionLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	log       *slog.Logger
	mu        sync.Mutex
	pending   map[string]int // creations per DaemonSet not yet seen by the informer
	// failedPods spaces out the replacing of a node's failed pod, per DaemonSet and node,
	// as kube-controller-manager's does (1 s doubling to 15 min): a kubelet that rejects
	// every pod would otherwise fight the controller in a hot loop.
	failedPods *flowcontrol.Backoff
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, sets appsinformers.DaemonSetInformer, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer,
	revisions appsinformers.ControllerRevisionInformer, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		client: client, sets: sets.Lister(), pods: pods.Lister(), nodes: nodes.Lister(), revisions: revisions.Lister(),
		synced:   []cache.InformerSynced{sets.Informer().HasSynced, pods.Informer().HasSynced, nodes.Informer().HasSynced, revisions.Informer().HasSynced},
		queue:    workloop.NewQueue[string]("daemonset"),
		recorder: recorder, log: log, pending: map[string]int{},
		failedPods: flowcontrol.NewBackOff(time.Second, 15*time.Minute),
	}
	enqueue := workloop.Enqueue(c.queue)
	if _, err := sets.Informer().AddEventHandler(workloop.OnEvery(enqueue)); err != nil {
		return nil, err
	}
	// Any node change may change where a DaemonSet belongs.
	enqueueAll := func(any) {
		list, err := c.sets.List(labels.Everything())
		if err != nil {
			return
		}
		for _, ds := range list {
			enqueue(ds)
		}
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueAll, DeleteFunc: enqueueAll,
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Node), newObj.(*corev1.Node)
			if !equality.Semantic.DeepEqual(o.Labels, n.Labels) || !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) || o.Spec.Unschedulable != n.Spec.Unschedulable {
				enqueueAll(n)
			}
		},
	}); err != nil {
		return nil, err
	}
	onPod := func(obj any, created bool) {
		pod, ok := workloop.Object[*corev1.Pod](obj)
		if !ok {
			return
		}
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			c.enqueueAdopters(pod)
			return
		}
		if ref.Kind == kind.Kind {
			key := pod.Namespace + "/" + ref.Name
			if created {
				c.observed(key)
			}
			c.queue.Add(key)
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { onPod(obj, true) },
		UpdateFunc: func(_, obj any) { onPod(obj, false) },
		DeleteFunc: func(obj any) { onPod(obj, false) },
	}); err != nil {
		return nil, err
	}
	_, err := revisions.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.addRevision, UpdateFunc: c.updateRevision, DeleteFunc: c.deleteRevision,
	})
	return c, err
}

// addRevision, as kube's addHistory: an orphan syncs the DaemonSets that would adopt it;
// one already being deleted is handled as deleted.
func (c *Controller) addRevision(obj any) {
	r := obj.(*appsv1.ControllerRevision)
	if r.DeletionTimestamp != nil {
		c.deleteRevision(r)
		return
	}
	if metav1.GetControllerOf(r) == nil {
		c.enqueueAdopters(r)
	}
}

// updateRevision, as kube's updateHistory: the old and new controllers sync; an orphan
// whose labels or controller changed syncs the DaemonSets that would adopt it.
func (c *Controller) updateRevision(oldObj, curObj any) {
	old, cur := oldObj.(*appsv1.ControllerRevision), curObj.(*appsv1.ControllerRevision)
	if old.ResourceVersion == cur.ResourceVersion {
		return // a resync
	}
	oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
	refChanged := !equality.Semantic.DeepEqual(oldRef, curRef)
	if refChanged && oldRef != nil {
		c.enqueueController(cur.Namespace, oldRef)
	}
	switch {
	case curRef != nil:
		c.enqueueController(cur.Namespace, curRef)
	case refChanged || !maps.Equal(old.Labels, cur.Labels):
		c.enqueueAdopters(cur)
	}
}

// deleteRevision, as kube's deleteHistory: the revision's controller syncs.
func (c *Controller) deleteRevision(obj any) {
	r, ok := workloop.Object[*appsv1.ControllerRevision](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(r); ref != nil {
		c.enqueueController(r.Namespace, ref)
	}
}

// enqueueController queues the DaemonSet ref names, if it is the one in the cache (kube's
// resolveControllerRef).
func (c *Controller) enqueueController(namespace string, ref *metav1.OwnerReference) {
	if ref.Kind != kind.Kind {
		return
	}
	if ds, err := c.sets.DaemonSets(namespace).Get(ref.Name); err == nil && ds.UID == ref.UID {
		c.queue.Add(namespace + "/" + ds.Name)
	}
}

// enqueueAdopters queues the DaemonSets whose selector matches an orphan (pod or
// revision): they adopt it.
func (c *Controller) enqueueAdopters(orphan metav1.Object) {
	sets, err := c.sets.DaemonSets(orphan.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range sets {
		selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		if err == nil && !selector.Empty() && selector.Matches(labels.Set(orphan.GetLabels())) {
			c.queue.Add(orphan.GetNamespace() + "/" + ds.Name)
		}
	}
}

func (c *Controller) observed(key string) {
	c.mu.Lock()
	if c.pending[key] > 0 {
		c.pending[key]--
	}
	c.mu.Unlock()
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { wait.Until(c.failedPods.GC, time.Minute, ctx.Done()) })
	workloop.RunWorkers(ctx, 2, c.queue, c.log, c.sync, c.synced...)
	wg.Wait()
}

// automaticTolerations are the ones every DaemonSet pod gets, so it runs where ordinary
// pods are kept away: on nodes that are not ready, unreachable, under pressure, or cordoned.
func automaticTolerations(spec *corev1.PodSpec) {
	add := func(key string, effect corev1.TaintEffect) {
		for _, t := range spec.Tolerations {
			if t.Key == key && t.Effect == effect {
				return
			}
		}
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
	}
	add(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)
	add(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	add(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)
	if spec.HostNetwork {
		add(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)
	}
}

// shouldRun says whether the DaemonSet's pod belongs on node (its node selector and
// required affinity match, and it tolerates every NoSchedule and NoExecute taint), and
// keep whether a pod already there may stay: as in Kubernetes, a pod that tolerates the
// NoExecute taints keeps running on a node a new one would not be started on (an
// unreachable node is also tainted NoSchedule).
func shouldRun(template *corev1.Pod, node *corev1.Node) (run, keep bool) {
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(template).Match(node); err != nil || !ok {
		return false, false
	}
	run, keep = true, true
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		tolerated := false
		for j := range template.Spec.Tolerations {
			if template.Spec.Tolerations[j].ToleratesTaint(klog.Background(), t, false) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			run = false
			keep = keep && t.Effect != corev1.TaintEffectNoExecute
		}
	}
	return run, keep
}

// podFor is the DaemonSet's pod for node: the template with the automatic tolerations,
// the revision hash, and a required node affinity naming only that node.
func podFor(ds *appsv1.DaemonSet, hash, node string) *corev1.Pod {
	pod := templatepod.New(&ds.Spec.Template, ds, kind)
	pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	if gen, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]; ok {
		pod.Labels[extensionsv1beta1.DaemonSetTemplateGenerationKey] = gen // as kube's CreatePodTemplate
	}
	automaticTolerations(&pod.Spec)
	if node == "" {
		return pod
	}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}
	return pod
}

// nodeOf is the node a pod is for: where it runs, or the node its affinity names.
func nodeOf(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == metav1.ObjectNameField && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return ""
}

// claimPods returns the pods ds controls, as kube's getDaemonPods (ClaimPods): it adopts
// the orphans its selector matches (those of a DaemonSet deleted with --cascade=orphan and
// made again), as the API now has them, and releases the pods it controls that its
// selector no longer matches (a user relabelled one), which the sync then replaces.
func (c *Controller) claimPods(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	adopted := map[types.UID]*corev1.Pod{}
	owned, err := controllerref.Claim(ctx, ds, kind, c.client.AppsV1().DaemonSets(ds.Namespace).Get, selector, pods, func(ctx context.Context, pod *corev1.Pod, patch []byte) error {
		updated, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			adopted[pod.UID] = updated
		}
		return err
	})
	for i, p := range owned {
		if a := adopted[p.UID]; a != nil {
			owned[i] = a
		}
	}
	return owned, err
}

// bumpCollisionCount renames ds's next revision after a hash collision, as kube's
// snapshot: the count goes up in the DaemonSet's status (unless ours was stale) and the
// collision is returned, so the sync is retried under the new name.
func (c *Controller) bumpCollisionCount(ctx context.Context, ds *appsv1.DaemonSet, collision error) error {
	latest, err := c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !equality.Semantic.DeepEqual(latest.Status.CollisionCount, ds.Status.CollisionCount) {
		return fmt.Errorf("found a stale collision count (%d, expected %d) of DaemonSet %q while processing; will retry until it is updated",
			ptr.Deref(ds.Status.CollisionCount, 0), ptr.Deref(latest.Status.CollisionCount, 0), ds.Name)
	}
	latest.Status.CollisionCount = ptr.To(ptr.Deref(latest.Status.CollisionCount, 0) + 1)
	if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, latest, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return collision
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	cached, found, err := workloop.Lookup(key, c.sets.DaemonSets)
	if !found {
		return 0, err
	}
	// As kube's syncDaemonSet: a DaemonSet being deleted is left to the garbage collector
	// (pods made now would be orphaned or deleted again; its status cannot be known).
	if cached.DeletionTimestamp != nil {
		return 0, nil
	}
	ds := cached.DeepCopy()
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return 0, err
	}
	all, err := c.pods.Pods(cached.Namespace).List(labels.Everything())
	if err != nil {
		return 0, err
	}
	pods, err := c.claimPods(ctx, ds, selector, all)
	if err != nil {
		return 0, err
	}
	// As kube's cleanupHistory, the revisions of its pods (even ended ones being deleted)
	// are kept, though they count against revisionHistoryLimit.
	owner, err := history.NewOwner(ds, kind, &ds.Spec.Template, ds.Status.CollisionCount, ds.Spec.RevisionHistoryLimit)
	if err != nil {
		return 0, err
	}
	owner.Live, owner.LiveCounts, owner.Selector = map[string]bool{}, true, selector
	owner.Get = func(ctx context.Context, name string, opts metav1.GetOptions) (metav1.Object, error) {
		return c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, name, opts)
	}
	for _, p := range pods {
		owner.Live[p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] = true
	}
	if _, _, err := history.Ensure(ctx, c.client, c.revisions, owner); errors.Is(err, history.ErrHashCollision) {
		return 0, c.bumpCollisionCount(ctx, ds, err)
	} else if err != nil {
		return 0, err
	}
	hash := owner.Hash
	// As in Kubernetes, a pod being deleted still holds its node until it is gone (unless it
	// has already ended): no replacement is started beside it, and the status counts it.
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil || !terminal(p) {
			byNode[nodeOf(p)] = append(byNode[nodeOf(p)], p)
		}
	}
	for _, have := range byNode {
		sort.Slice(have, func(i, j int) bool { return olderScheduled(have[i], have[j]) })
	}
	template := podFor(ds, hash, "")
	surge := maxSurge(ds, 1) > 0
	var create []string
	var remove []*corev1.Pod
	var retry time.Duration // until a failed pod held back may go
	eligible := map[string]bool{}
	for _, node := range nodes {
		run, keep := shouldRun(template, node)
		eligible[node.Name] = run
		c2, r, hold := c.podsForNode(ds, node.Name, byNode[node.Name], run, keep, surge, hash)
		create, remove = append(create, c2...), append(remove, r...)
		retry = sooner(retry, hold)
	}
	for n, have := range byNode { // pods for nodes that are gone
		if _, known := eligible[n]; !known {
			remove = append(remove, live(have)...)
		}
	}
	c.mu.Lock()
	waiting := c.pending[key] > 0
	c.mu.Unlock()
	var manageErr error
	if !waiting {
		manageErr = c.manage(ctx, key, ds, hash, create, remove, byNode, eligible)
	}
	// As kube's syncDaemonSet, the status is written even when managing failed (a pod the
	// quota refused), and a sync still waiting for its creations does not raise the
	// observed generation: that generation was not acted on.
	st := status(ds, hash, byNode, eligible)
	if waiting {
		st.ObservedGeneration = cached.Status.ObservedGeneration
	}
	if !equality.Semantic.DeepEqual(st, cached.Status) {
		ds.Status = st
		if _, err := c.client.AppsV1().DaemonSets(cached.Namespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return 0, errors.Join(manageErr, err)
		}
	}
	if manageErr != nil {
		return 0, manageErr
	}
	if ds.Spec.MinReadySeconds > 0 && st.NumberAvailable < st.NumberReady {
		retry = sooner(retry, time.Duration(ds.Spec.MinReadySeconds)*time.Second)
	}
	return retry, nil
}

// manage creates and deletes pods so that each eligible node runs one, and once none is
// missing or extra, goes on with the rolling update.
func (c *Controller) manage(ctx context.Context, key string, ds *appsv1.DaemonSet, hash string, create []string, remove []*corev1.Pod,
	byNode map[string][]*corev1.Pod, eligible map[string]bool) error {
	if err := c.createPods(ctx, key, ds, hash, create); err != nil {
		return err
	}
	if err := c.deletePods(ctx, ds, remove); err != nil {
		return err
	}
	// Like Kubernetes, update only once the pods are as the manage step wants them.
	if len(create) == 0 && len(remove) == 0 {
		return c.rollingUpdate(ctx, key, ds, hash, byNode, eligible)
	}
	return nil
}

// sooner is the shorter of two waits, 0 standing for none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

func (c *Controller) createPods(ctx context.Context, key string, ds *appsv1.DaemonSet, hash string, nodes []string) error {
	c.mu.Lock()
	c.pending[key] += len(nodes)
	c.mu.Unlock()
	for i, node := range nodes {
		created, err := c.client.CoreV1().Pods(ds.Namespace).Create(ctx, podFor(ds, hash, node), metav1.CreateOptions{})
		if err != nil {
			for range len(nodes) - i {
				c.observed(key)
			}
			c.recorder.Eventf(ds, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
			return err
		}
		c.recorder.Eventf(ds, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	}
	return nil
}

func (c *Controller) deletePods(ctx context.Context, ds *appsv1.DaemonSet, pods []*corev1.Pod) error {
	for _, p := range pods {
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			c.recorder.Eventf(ds, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
			return err
		}
		c.recorder.Eventf(ds, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
	}
	return nil
}

// terminal: the pod has ended (it holds its node no longer once it is being deleted).
func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// olderScheduled orders a node's pods as Kubernetes does: scheduled ones first, then by
// creation time and name.
func olderScheduled(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
		return a.Spec.NodeName != ""
	}
	if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.Name < b.Name
	}
	return a.CreationTimestamp.Before(&b.CreationTimestamp)
}

// live is the pods not being deleted.
func live(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// maxSurge and maxUnavailable are the rolling update's limits out of desired nodes
// (kube's SurgeCount and UnavailableCount: percentages round up; 0 when unset).
func maxSurge(ds *appsv1.DaemonSet, desired int) int {
	return rollingLimit(ds, func(ru *appsv1.RollingUpdateDaemonSet) *intstr.IntOrString { return ru.MaxSurge }, desired)
}

func maxUnavailable(ds *appsv1.DaemonSet, desired int) int {
	return rollingLimit(ds, func(ru *appsv1.RollingUpdateDaemonSet) *intstr.IntOrString { return ru.MaxUnavailable }, desired)
}

func rollingLimit(ds *appsv1.DaemonSet, limit func(*appsv1.RollingUpdateDaemonSet) *intstr.IntOrString, desired int) int {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil || limit(ru) == nil {
		return 0
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(limit(ru), desired, true)
	if err != nil {
		return 0
	}
	return max(v, 0)
}

// podsForNode is kube's podsShouldBeOnNode: whether node needs a pod and which of its pods
// (have, oldest first) go. An ended pod is deleted (and replaced on a later sync), a failed
// one once the node's back-off allows (hold is how long until then); without maxSurge one
// running pod stays, the oldest; with it, the oldest of the current revision and the oldest
// of an older one may run side by side until the new one is available.
func (c *Controller) podsForNode(ds *appsv1.DaemonSet, node string, have []*corev1.Pod, run, keep, surge bool, hash string) (create []string, remove []*corev1.Pod, hold time.Duration) {
	switch {
	case run && len(have) == 0:
		return []string{node}, nil, 0
	case !keep:
		return nil, live(have), 0
	}
	var running []*corev1.Pod
	for _, p := range live(have) {
		switch p.Status.Phase {
		case corev1.PodFailed:
			backoff, now := string(ds.UID)+"/"+node, c.failedPods.Clock.Now()
			if c.failedPods.IsInBackOffSinceUpdate(backoff, now) {
				hold = c.failedPods.Get(backoff)
				continue
			}
			c.failedPods.Next(backoff, now)
			c.recorder.Eventf(ds, corev1.EventTypeWarning, "FailedDaemonPod", "Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, node)
			remove = append(remove, p)
		case corev1.PodSucceeded:
			c.recorder.Eventf(ds, corev1.EventTypeNormal, "SucceededDaemonPod", "Found succeeded daemon pod %s/%s on node %s, will try to delete it", p.Namespace, p.Name, node)
			remove = append(remove, p)
		default:
			running = append(running, p)
		}
	}
	if !surge {
		if len(running) > 1 {
			remove = append(remove, running[1:]...)
		}
		return nil, remove, hold
	}
	if len(running) <= 1 {
		if len(running) == 0 && run {
			create = []string{node}
		}
		return create, remove, hold
	}
	var oldestNew, oldestOld *corev1.Pod
	for _, p := range running {
		switch {
		case p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash && oldestNew == nil:
			oldestNew = p
		case p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash && oldestOld == nil:
			oldestOld = p
		default:
			remove = append(remove, p)
		}
	}
	if oldestNew != nil && oldestOld != nil && (!podready.Ready(oldestOld) || podready.Available(oldestNew, ds.Spec.MinReadySeconds, time.Now())) {
		remove = append(remove, oldestOld)
	}
	return create, remove, hold
}

// isUpdated is kube's IsPodUpdated: p is of ds's current template by its hash, or by
// its pod-template-generation (the DaemonSet's template generation annotation).
func isUpdated(p *corev1.Pod, ds *appsv1.DaemonSet, hash string) bool {
	gen, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]
	return p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash || ok && p.Labels[extensionsv1beta1.DaemonSetTemplateGenerationKey] == gen
}

// updatedAndOld is kube's findUpdatedPodsOnNode: a node's live pod of the current revision
// and its pod of an older one; ok is false when it has two of either.
func updatedAndOld(pods []*corev1.Pod, ds *appsv1.DaemonSet, hash string) (updated, old *corev1.Pod, ok bool) {
	for _, p := range live(pods) {
		if isUpdated(p, ds, hash) {
			if updated != nil {
				return nil, nil, false
			}
			updated = p
		} else {
			if old != nil {
				return nil, nil, false
			}
			old = p
		}
	}
	return updated, old, true
}

// rollingUpdate replaces pods of old revisions as kube's daemonset controller does. Without
// maxSurge it deletes them (unavailable ones first) while no more than maxUnavailable of
// the nodes lack an available pod, and the next syncs start the new ones once the old are
// gone. With maxSurge it starts a new pod beside an old one on up to maxSurge nodes at a
// time (at once where the old one is unavailable) and deletes the old one when the new
// one is available.
func (c *Controller) rollingUpdate(ctx context.Context, key string, ds *appsv1.DaemonSet, hash string, byNode map[string][]*corev1.Pod, eligible map[string]bool) error {
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return nil
	}
	nodes := map[string][]*corev1.Pod{}
	desired := 0
	for node, run := range eligible {
		if run {
			desired++
			nodes[node] = byNode[node]
		}
	}
	for node, have := range byNode {
		nodes[node] = have
	}
	surge, unavailable := maxSurge(ds, desired), maxUnavailable(ds, desired)
	if desired > 0 && surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	now := time.Now()
	available := func(p *corev1.Pod) bool { return podready.Available(p, ds.Spec.MinReadySeconds, now) }
	if surge == 0 {
		var remove, candidates []*corev1.Pod
		numUnavailable := 0
		for _, have := range nodes {
			updated, old, ok := updatedAndOld(have, ds, hash)
			switch {
			case !ok, updated == nil && old == nil, updated != nil && old != nil:
				numUnavailable++ // the manage step sees to this node
			case updated != nil:
				if !available(updated) {
					numUnavailable++
				}
			case !available(old):
				remove = append(remove, old) // replacing it costs no availability
				numUnavailable++
			case numUnavailable < unavailable:
				candidates = append(candidates, old)
			}
		}
		n := min(max(unavailable-numUnavailable, 0), len(candidates))
		return c.deletePods(ctx, ds, append(remove, candidates[:n]...))
	}
	var remove, shouldNotRun []*corev1.Pod
	var replace, candidates []string
	numSurge, numAvailable := 0, 0
	for node, have := range nodes {
		updated, old, ok := updatedAndOld(have, ds, hash)
		if !ok {
			numSurge++
			continue
		}
		if old != nil && available(old) || old == nil && updated != nil && available(updated) {
			numAvailable++
		}
		switch {
		case old == nil:
		case updated == nil && !available(old):
			if !eligible[node] {
				remove = append(remove, old)
				continue
			}
			replace = append(replace, node)
		case updated == nil:
			if !eligible[node] {
				shouldNotRun = append(shouldNotRun, old)
				continue
			}
			if numSurge < surge {
				candidates = append(candidates, node)
			}
		case !available(updated):
			numSurge++
		default:
			remove = append(remove, old)
		}
	}
	// With maxSurge the owner expects full availability: a pod on a node it no longer
	// belongs on goes only once as many are available elsewhere.
	if n := min(numAvailable-desired, len(shouldNotRun)); n > 0 {
		remove = append(remove, shouldNotRun[:n]...)
	}
	n := min(max(surge-numSurge, 0), len(candidates))
	if err := c.createPods(ctx, key, ds, hash, append(replace, candidates[:n]...)); err != nil {
		return err
	}
	return c.deletePods(ctx, ds, remove)
}

// status counts the nodes and pods as `kubectl rollout status ds` reads them.
func status(ds *appsv1.DaemonSet, hash string, byNode map[string][]*corev1.Pod, eligible map[string]bool) appsv1.DaemonSetStatus {
	st := appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, CollisionCount: ds.Status.CollisionCount, Conditions: ds.Status.Conditions}
	now := time.Now()
	for node, run := range eligible {
		have := byNode[node]
		if !run {
			if len(have) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(have) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		p := have[0]
		if podready.Ready(p) {
			st.NumberReady++
		}
		if podready.Available(p, ds.Spec.MinReadySeconds, now) {
			st.NumberAvailable++
		}
		if isUpdated(p, ds, hash) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	return st
}
