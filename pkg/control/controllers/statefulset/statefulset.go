// Package statefulset runs StatefulSets as kube-controller-manager's statefulset controller
// does: pods <set>-<ordinal> with stable names, hostnames and claims from
// volumeClaimTemplates; OrderedReady (one at a time, each Running and Ready before the next;
// scale-down from the highest ordinal) or Parallel; RollingUpdate from the highest ordinal
// down to the partition, or OnDelete; ControllerRevisions for current and update revisions.
package statefulset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllerref"
	"github.com/minik8s/minik8s/internal/controller/history"
	"github.com/minik8s/minik8s/internal/controller/podready"
	"github.com/minik8s/minik8s/internal/controller/templatepod"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

var kind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// Controller is the statefulset controller.
type Controller struct {
	client    kubernetes.Interface
	sets      appslisters.StatefulSetLister
	pods      corelisters.PodLister
	revisions appslisters.ControllerRevisionLister
	claims    corelisters.PersistentVolumeClaimLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	log       *slog.Logger
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, sets appsinformers.StatefulSetInformer, pods coreinformers.PodInformer,
	revisions appsinformers.ControllerRevisionInformer, claims coreinformers.PersistentVolumeClaimInformer, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		client: client, sets: sets.Lister(), pods: pods.Lister(), revisions: revisions.Lister(), claims: claims.Lister(),
		synced: []cache.InformerSynced{sets.Informer().HasSynced, pods.Informer().HasSynced, revisions.Informer().HasSynced,
			claims.Informer().HasSynced},
		queue:    workloop.NewQueue[string]("statefulset"),
		recorder: recorder, log: log,
	}
	if _, err := sets.Informer().AddEventHandler(workloop.OnEvery(workloop.Enqueue(c.queue))); err != nil {
		return nil, err
	}
	onPod := func(obj any) {
		pod, ok := workloop.Object[*corev1.Pod](obj)
		if !ok {
			return
		}
		switch ref := metav1.GetControllerOf(pod); {
		case ref == nil:
			c.enqueueAdopters(pod)
		case ref.Kind == kind.Kind:
			c.queue.Add(pod.Namespace + "/" + ref.Name)
		}
	}
	_, err := pods.Informer().AddEventHandler(workloop.OnEvery(onPod))
	return c, err
}

// enqueueAdopters queues the sets that may adopt an orphan pod: those it is named after
// whose selector matches it.
func (c *Controller) enqueueAdopters(pod *corev1.Pod) {
	sets, err := c.sets.StatefulSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, set := range sets {
		selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
		if err == nil && !selector.Empty() && selector.Matches(labels.Set(pod.Labels)) && ordinal(set, pod) >= 0 {
			c.queue.Add(pod.Namespace + "/" + set.Name)
		}
	}
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 2, c.queue, c.log, c.sync, c.synced...)
}

// claimPods returns the pods set controls, as kube's getPodsForStatefulSet (ClaimPods with
// isMemberOf): it adopts the orphans its selector matches that are named as its members
// (those of a set deleted with --cascade=orphan and made again) and releases the pods it
// controls that its selector no longer matches (a user relabelled one).
func (c *Controller) claimPods(ctx context.Context, set *appsv1.StatefulSet, all []*corev1.Pod) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || selector.Empty() {
		return controllerref.Controlled(all, set.UID), nil
	}
	var candidates []*corev1.Pod
	for _, p := range all {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == set.UID || ref == nil && ordinal(set, p) >= 0 {
			candidates = append(candidates, p)
		}
	}
	return controllerref.Claim(ctx, set, kind, c.client.AppsV1().StatefulSets(set.Namespace).Get, selector, candidates, func(ctx context.Context, pod *corev1.Pod, patch []byte) error {
		_, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// ensureRevision makes sure set's template has the newest revision and returns it with
// every revision of set. A revision name taken by another template bumps
// set.Status.CollisionCount, which the status update records, and the name with it, as
// kube's CreateControllerRevision does.
func (c *Controller) ensureRevision(ctx context.Context, set *appsv1.StatefulSet, owned []*corev1.Pod) (*appsv1.ControllerRevision, []*appsv1.ControllerRevision, error) {
	for {
		owner, err := history.NewStatefulSetOwner(set)
		if err != nil {
			return nil, nil, err
		}
		// As kube's truncateHistory, the current revision and those of its pods are kept,
		// and do not count against revisionHistoryLimit.
		owner.Live = map[string]bool{set.Status.CurrentRevision: true}
		owner.Get = func(ctx context.Context, name string, opts metav1.GetOptions) (metav1.Object, error) {
			return c.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, name, opts)
		}
		for _, p := range owned {
			owner.Live[p.Labels[history.HashLabel]] = true
		}
		update, revs, err := history.Ensure(ctx, c.client, c.revisions, owner)
		if !errors.Is(err, history.ErrHashCollision) {
			return update, revs, err
		}
		set.Status.CollisionCount = ptr.To(ptr.Deref(set.Status.CollisionCount, 0) + 1)
	}
}

// ordinal of a pod of set, or -1.
func ordinal(set *appsv1.StatefulSet, pod *corev1.Pod) int {
	suffix, ok := strings.CutPrefix(pod.Name, set.Name+"-")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(suffix)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func runningAndReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && podready.Ready(p)
}

// availableAt is kube's isRunningAndAvailable for set at now: running, ready, not being
// deleted, and Ready for the set's minReadySeconds.
func availableAt(set *appsv1.StatefulSet, now time.Time) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		return runningAndReady(p) && podready.Available(p, set.Spec.MinReadySeconds, now)
	}
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	cached, found, err := workloop.Lookup(key, c.sets.StatefulSets)
	if !found {
		return 0, err
	}
	set := cached.DeepCopy()
	now := time.Now()
	all, err := c.pods.Pods(cached.Namespace).List(labels.Everything())
	if err != nil {
		return 0, err
	}
	owned, err := c.claimPods(ctx, set, all)
	if err != nil {
		return 0, err
	}
	update, revs, err := c.ensureRevision(ctx, set, owned)
	if err != nil {
		return 0, err
	}
	current := update
	for _, r := range revs {
		if r.Name == set.Status.CurrentRevision {
			current = r
		}
	}
	pods := map[int]*corev1.Pod{}
	for _, p := range owned {
		if i := ordinal(set, p); i >= 0 {
			pods[i] = p
		}
	}
	var manageErr error
	if set.DeletionTimestamp == nil {
		manageErr = c.manage(ctx, set, pods, current, update, now)
	}
	// As kube's performUpdate, the status is written even when a step failed.
	st := status(set, pods, current, update, now)
	if !equality.Semantic.DeepEqual(st, cached.Status) {
		set.Status = st
		if _, err := c.client.AppsV1().StatefulSets(cached.Namespace).UpdateStatus(ctx, set, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return 0, errors.Join(manageErr, err)
		}
	}
	if manageErr != nil {
		return 0, manageErr
	}
	// A pod Ready but not yet available: look again when it becomes so.
	return podready.NextAvailable(maps.Values(pods), set.Spec.MinReadySeconds, now), nil
}

// manage takes one step towards the spec: create, replace or delete pods in ordinal order.
func (c *Controller) manage(ctx context.Context, set *appsv1.StatefulSet, pods map[int]*corev1.Pod, current, update *appsv1.ControllerRevision, now time.Time) error {
	replicas, start := int(ptr.Deref(set.Spec.Replicas, 1)), startOrdinal(set)
	ordered := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	available := availableAt(set, now)
	partition := 0
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = int(*ru.Partition)
	}
	// The replicas-th ordinals from start (the partition counts from start too, as kube's):
	// create what is missing, replace what ended.
	for i := 0; i < replicas; i++ {
		pod := pods[start+i]
		switch {
		case pod == nil:
			rev := update
			if i < partition && set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
				rev = current
			}
			claim, err := c.claimOfFormerPod(set, start+i)
			if err != nil {
				return err
			}
			if claim != "" {
				return fmt.Errorf("claim %s still belongs to a deleted pod %s-%d: waiting for its garbage collection", claim, set.Name, start+i)
			}
			if err := c.createPod(ctx, set, start+i, rev); err != nil {
				return err
			}
			if ordered {
				return nil
			}
		case (pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded) && pod.DeletionTimestamp == nil:
			// A pod of a set is to run forever: one that ended, even with success, is replaced.
			if err := c.deletePod(ctx, set, pod); err != nil {
				return err
			}
			if ordered {
				return nil
			}
		case ordered && !available(pod):
			return nil // wait for this one (Running, Ready for minReadySeconds) before the next
		default:
			if err := c.restoreIdentity(ctx, set, pod); err != nil {
				return err
			}
			if err := c.applyRetention(ctx, set, pod, false); err != nil {
				return err
			}
		}
	}
	for _, i := range condemnedLeft(pods, start, replicas) {
		if err := c.applyRetention(ctx, set, pods[i], true); err != nil {
			return err
		}
	}
	// Outside those ordinals: delete, highest first (one at a time when ordered).
	for _, i := range condemnedToDelete(pods, start, replicas, ordered, available) {
		if err := c.deletePod(ctx, set, pods[i]); err != nil {
			return err
		}
	}
	if ordered && len(condemnedLeft(pods, start, replicas)) > 0 {
		return nil // scaling down comes before updating
	}
	// RollingUpdate, as kube's: from the highest ordinal down to the partition, delete the
	// first pod not at the update revision, but stop at an updated one that is not yet
	// available (Running, Ready for minReadySeconds). OrderedReady got here only with every
	// pod available; Parallel may have unavailable pods below.
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return nil
	}
	for i := replicas - 1; i >= partition; i-- {
		switch pod := pods[start+i]; {
		case pod == nil:
			return nil // just created
		case !ofRevision(set, pod, update) && pod.DeletionTimestamp == nil:
			return c.deletePod(ctx, set, pod)
		case !available(pod):
			return nil
		}
	}
	return nil
}

// condemnedLeft is the ordinals outside the replicas ordinals from start, highest first.
func condemnedLeft(pods map[int]*corev1.Pod, start, replicas int) []int {
	var condemned []int
	for i := range pods {
		if i < start || i >= start+replicas {
			condemned = append(condemned, i)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(condemned)))
	return condemned
}

// condemnedToDelete picks the pods outside the set's ordinals to delete now. Parallel: all
// not yet terminating. Ordered, as kube's controller: at most one, the highest, once every
// higher one is gone, and only if it is available or the lowest unavailable one, so a
// scale-down halts while a pod it would pass is unhealthy.
func condemnedToDelete(pods map[int]*corev1.Pod, start, replicas int, ordered bool, available func(*corev1.Pod) bool) []int {
	condemned := condemnedLeft(pods, start, replicas)
	if !ordered {
		var live []int
		for _, i := range condemned {
			if pods[i].DeletionTimestamp == nil {
				live = append(live, i)
			}
		}
		return live
	}
	firstUnhealthy := -1
	for _, i := range condemned { // highest first: the last one found is the lowest
		if !available(pods[i]) {
			firstUnhealthy = i
		}
	}
	if len(condemned) == 0 {
		return nil
	}
	switch top := condemned[0]; {
	case pods[top].DeletionTimestamp != nil:
		return nil // wait for it to go
	case !available(pods[top]) && top != firstUnhealthy:
		return nil
	default:
		return []int{top}
	}
}

// startOrdinal is the set's first ordinal: spec.ordinals.start, or 0.
func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

// templateOf is the pod template a revision recorded.
func templateOf(rev *appsv1.ControllerRevision) (corev1.PodTemplateSpec, error) {
	var patch struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	err := json.Unmarshal(rev.Data.Raw, &patch)
	return patch.Spec.Template, err
}

// createPod makes pod <set>-<i> of revision rev, its claims first.
func (c *Controller) createPod(ctx context.Context, set *appsv1.StatefulSet, i int, rev *appsv1.ControllerRevision) error {
	template, err := templateOf(rev)
	if err != nil {
		return fmt.Errorf("revision %s: %w", rev.Name, err)
	}
	name := fmt.Sprintf("%s-%d", set.Name, i)
	// Named, yet with the generateName kube's GetPodFromTemplate gives every pod.
	pod := templatepod.New(&template, set, kind)
	pod.Name = name
	pod.Labels[history.HashLabel] = rev.Name // a StatefulSet's pods name their revision, as kube's
	pod.Labels[appsv1.StatefulSetPodNameLabel] = name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(i)
	pod.Spec.Hostname, pod.Spec.Subdomain = name, set.Spec.ServiceName
	// As kube's createPersistentVolumeClaims, every claim is tried and their errors fail the
	// pod, whose event then tells them too.
	var claimErrs []error
	for _, tmpl := range set.Spec.VolumeClaimTemplates {
		claim := claimName(set, &tmpl, i)
		if err := c.ensureClaim(ctx, set, tmpl, claim, name); err != nil {
			claimErrs = append(claimErrs, err)
		}
		volume := corev1.Volume{Name: tmpl.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
		replaced := false
		for j := range pod.Spec.Volumes {
			if pod.Spec.Volumes[j].Name == tmpl.Name {
				pod.Spec.Volumes[j], replaced = volume, true
			}
		}
		if !replaced {
			pod.Spec.Volumes = append(pod.Spec.Volumes, volume)
		}
	}
	if err := utilerrors.NewAggregate(claimErrs); err != nil {
		c.recordPodEvent(set, "create", name, err)
		return err
	}
	created, err := c.client.CoreV1().Pods(set.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Our cache is behind, or the name is another's (a pod released or never ours):
		// retry with back-off, without an Event, as kube's CreateStatefulPod.
		return err
	}
	c.recordPodEvent(set, "create", name, err)
	if err != nil {
		return err
	}
	return c.applyRetention(ctx, set, created, false)
}

// ensureClaim makes a pod's claim from its template unless it exists: claims outlive their
// pods, so scale down and up finds the same data. A claim being deleted is an error: the
// pod waits for it to go and be made anew.
func (c *Controller) ensureClaim(ctx context.Context, set *appsv1.StatefulSet, tmpl corev1.PersistentVolumeClaim, claim, pod string) error {
	switch existing, err := c.claims.PersistentVolumeClaims(set.Namespace).Get(claim); {
	case err == nil && existing.DeletionTimestamp != nil:
		return fmt.Errorf("pvc %s is being deleted", claim)
	case err == nil:
		return nil
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: set.Namespace, Labels: map[string]string{}, Annotations: tmpl.Annotations},
		Spec:       tmpl.Spec,
	}
	for k, v := range tmpl.Labels {
		pvc.Labels[k] = v
	}
	if set.Spec.Selector != nil {
		for k, v := range set.Spec.Selector.MatchLabels {
			pvc.Labels[k] = v
		}
	}
	_, err := c.client.CoreV1().PersistentVolumeClaims(set.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err): // our cache is behind: look again
		return fmt.Errorf("failed to create PVC %s: %w", claim, err)
	case err != nil:
		c.recorder.Eventf(set, corev1.EventTypeWarning, "FailedCreate", "Create Claim %s for Pod %s in StatefulSet %s failed error: %v", claim, pod, set.Name, err)
		return fmt.Errorf("failed to create PVC %s: %w", claim, err)
	}
	c.recorder.Eventf(set, corev1.EventTypeNormal, "SuccessfulCreate", "Create Claim %s Pod %s in StatefulSet %s success", claim, pod, set.Name)
	return nil
}

func (c *Controller) deletePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	c.recordPodEvent(set, "delete", pod.Name, err)
	return err
}

// restoreIdentity gives a pod back the statefulset.kubernetes.io/pod-name label it lost
// (and its pod-index label), as kube's identityMatches and updateIdentity.
func (c *Controller) restoreIdentity(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	if pod.Labels[appsv1.StatefulSetPodNameLabel] == pod.Name {
		return nil
	}
	pod = pod.DeepCopy()
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ordinal(set, pod))
	_, err := c.client.CoreV1().Pods(pod.Namespace).Update(ctx, pod, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return err // our cache is behind: look again
	}
	c.recordPodEvent(set, "update", pod.Name, err)
	return err
}

// recordPodEvent says what became of a verb (create, update, delete) on a pod, in kube's
// words (its recordPodEvent, the verb title-cased in reason and message).
func (c *Controller) recordPodEvent(set *appsv1.StatefulSet, verb, pod string, err error) {
	verb = strings.ToUpper(verb[:1]) + verb[1:]
	if err != nil {
		c.recorder.Eventf(set, corev1.EventTypeWarning, "Failed"+verb, "%s Pod %s in StatefulSet %s failed error: %v", verb, pod, set.Name, err)
		return
	}
	c.recorder.Eventf(set, corev1.EventTypeNormal, "Successful"+verb, "%s Pod %s in StatefulSet %s successful", verb, pod, set.Name)
}

// ofRevision: pod of set was made from rev. Its label names the revision, as kube's
// StatefulSet pods do; pods made before minik8s did so carry the bare hash, the suffix of
// the revision's name.
func ofRevision(set *appsv1.StatefulSet, pod *corev1.Pod, rev *appsv1.ControllerRevision) bool {
	label := pod.Labels[history.HashLabel]
	return label == rev.Name || set.Name+"-"+label == rev.Name
}

// status counts the pods as `kubectl get sts` and `kubectl rollout status sts` read them;
// once every pod of a RollingUpdate runs the update revision and is ready it becomes the
// current one.
func status(set *appsv1.StatefulSet, pods map[int]*corev1.Pod, current, update *appsv1.ControllerRevision, now time.Time) appsv1.StatefulSetStatus {
	// kube's updateStatefulSet writes collisionCount always, 0 until a collision.
	st := appsv1.StatefulSetStatus{ObservedGeneration: set.Generation, CollisionCount: ptr.To(ptr.Deref(set.Status.CollisionCount, 0)), Conditions: set.Status.Conditions,
		CurrentRevision: current.Name, UpdateRevision: update.Name}
	for _, p := range pods {
		// As kube's computeReplicaStatus: a pod being deleted still counts in replicas
		// and, running and ready, in readyReplicas; in no revision's count.
		st.Replicas++
		if p.Status.Phase == corev1.PodRunning && podready.Ready(p) {
			st.ReadyReplicas++
			if podready.Available(p, set.Spec.MinReadySeconds, now) {
				st.AvailableReplicas++
			}
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		switch {
		case ofRevision(set, p, update):
			st.UpdatedReplicas++
			if current.Name == update.Name {
				st.CurrentReplicas++
			}
		case ofRevision(set, p, current):
			st.CurrentReplicas++
		}
	}
	// kube's completeRollingUpdate: a RollingUpdate with every replica updated, and ready.
	// OnDelete keeps its current revision.
	want := ptr.Deref(set.Spec.Replicas, 1)
	if set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType && st.UpdatedReplicas == want && st.ReadyReplicas == want && st.Replicas == want {
		st.CurrentRevision, st.CurrentReplicas = update.Name, st.UpdatedReplicas
	}
	return st
}
